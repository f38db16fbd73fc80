"""dpfda.practice.realdata: a public domain onto [0, 1], public value bands onto c_j and B'.

References are independent of the module: scipy's shifted Legendre polynomials and
finite differences for derivatives, adaptive quadrature for the L² norm of the
interpolated band, and explicit affine formulas for the maps.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special

import dpfda
from dpfda import Domain, KernelSpace, LegendreSpace, PublicFrame, gaussian_kernel, legendre_derivative
from dpfda.maths.rounding import product_atol
from dpfda.maths.summation import gamma
from dpfda.practice import realdata

AGES = np.array([1, 1.25, 1.5, 1.75, 2, 3, 4, 5, 6, 7, 8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5, 12,
                 12.5, 13, 13.5, 14, 14.5, 15, 15.5, 16, 16.5, 17, 17.5, 18])


def band():
    lo = 60.0 + 4.5 * (AGES - 1)
    hi = lo + 25.0 + 2.0 * (AGES - 1)
    return lo, hi


def _map_slack(f):
    """How far |y| = |clip(x) − r|/scale may pass c_j: the band's edges r ± scale·c_j and the map
    round by γ₄ of |r|/scale + c_j (r = the reference's values at the grid)."""
    return gamma(4) * (np.abs(f.geometry.values(f.reference)) / f.scale + f.clip)


def _fd_atol(coef, m, h, fmax, d3):
    """A central difference's error: h²/6 times a bound d3 on |f'''|, plus the rounding of the two
    values (γ_{4m²} of fmax, their size) over 2h."""
    return h * h / 6 * d3 + 2 * gamma(4 * m * m) * fmax / (2 * h)


def _d3(coef, m):
    """A bound on |f'''| on [0, 1] for f = Σ c_k φ_k: Markov's inequality for P_{k−1} on [−1, 1]
    (|P'''_n| <= n²(n² − 1)(n² − 4)/15 <= n⁶/15), times 2³ for t ↦ 2t − 1 and sqrt(2k − 1)."""
    k = np.arange(1, m + 1)
    return np.abs(coef) @ (np.sqrt(2 * k - 1) * 8 * (k - 1.0) ** 6 / 15)


def frame(m=6):
    lo, hi = band()
    return PublicFrame(LegendreSpace(m), AGES, Domain(1, 18, "age"), lo, hi)


# --- Domain ---------------------------------------------------------------------------


def test_domain_maps_affinely_both_ways():
    d = Domain(1, 18, "age")
    assert d.length == 17
    t = d.to_unit(AGES)
    np.testing.assert_allclose(t, (AGES - 1) / 17, rtol=0, atol=1e-15)  # one rounding of a value <= 1
    assert t[0] == 0.0 and t[-1] == 1.0
    np.testing.assert_allclose(d.from_unit(t), AGES, rtol=0, atol=gamma(3) * 18)  # 1 + t·17, t off by u


@pytest.mark.parametrize("start, stop, err, match", [
    (18, 1, ValueError, "stop must be > start"),
    (1, 1, ValueError, "stop must be > start"),
    (1, np.inf, ValueError, "stop must be finite"),
    ("1", 18, TypeError, "start must be a real number"),
    (True, 18, TypeError, "start must be a real number"),
])
def test_domain_rejects_bad_ends(start, stop, err, match):
    with pytest.raises(err, match=match):
        Domain(start, stop)


def test_domain_rejects_points_outside_with_their_name():
    d = Domain(1, 18, "age")
    with pytest.raises(ValueError, match=r"age must lie in \[1, 18\].*got 0.5"):
        d.to_unit([0.5, 2.0])
    with pytest.raises(ValueError, match="age must hold finite values"):
        d.to_unit([np.nan])
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        d.from_unit([1.5])


# --- Legendre derivative ------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 5, 10])
def test_legendre_derivative_matches_scipy_and_finite_differences(m):
    space = LegendreSpace(m)
    rng = np.random.default_rng(m)
    coef = rng.standard_normal((3, m))
    t = np.linspace(0.01, 0.99, 17)
    got = legendre_derivative(space, coef, t)
    assert got.shape == (3, 17)
    ref = np.zeros((3, 17))
    for k in range(1, m + 1):
        # d/dt P*_{k-1}(t) with scipy's shifted Legendre polynomial, by its coefficients
        p = special.sh_legendre(k - 1)
        ref += np.sqrt(2 * k - 1) * coef[:, [k - 1]] * np.polyder(p)(t)
    # the library's recurrence (k² ulps of |P'_k| <= k²) against scipy's monomial coefficients
    # evaluated by Horner's rule (γ_{2m} of Σ|p'_i|·t^i): both per term, times sqrt(2k − 1)·|c_k|
    mono = np.stack([np.polyval(np.abs(np.polyder(special.sh_legendre(k - 1))), t) + (k - 1.0) ** 2 * 2
                     for k in range(1, m + 1)])
    atol = gamma(4 * m * m) * (np.abs(coef) * np.sqrt(2 * np.arange(1, m + 1) - 1)) @ mono
    assert np.all(np.abs(got - ref) <= atol)
    h = 1e-6
    fd = (space.evaluate(coef, t + h) - space.evaluate(coef, t - h)) / (2 * h)
    fmax = np.abs(coef) @ np.sqrt(2 * np.arange(1, m + 1) - 1)
    atol = _fd_atol(coef, m, h, fmax, _d3(coef, m))[:, None]
    assert np.all(np.abs(got - fd) <= atol)


def test_legendre_derivative_rejects_bad_input():
    with pytest.raises(TypeError, match="space must be a LegendreSpace"):
        legendre_derivative(KernelSpace(gaussian_kernel(0.2)), np.zeros(3), [0.5])
    with pytest.raises(ValueError, match="last axis must have length m=3"):
        legendre_derivative(LegendreSpace(3), np.zeros(4), [0.5])
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        legendre_derivative(LegendreSpace(3), np.zeros(3), [1.2])


# --- PublicFrame --------------------------------------------------------------------------


def test_frame_maps_the_band_inside_the_clip_and_the_largest_clip_is_one():
    f = frame()
    lo, hi = band()
    r = f.geometry.values(f.reference)
    assert np.all(f.clip <= 1.0) and f.clip.max() == 1.0  # half/max(half): exactly, division is monotone
    # both edges of the band map into [-c_j, c_j], and one of them onto an end
    ylo, yhi = f.to_unit(np.stack([lo, hi]))
    slack = _map_slack(f)
    assert np.all(np.abs(ylo) <= f.clip + slack) and np.all(np.abs(yhi) <= f.clip + slack)
    assert np.all(np.abs(np.maximum(np.abs(ylo), np.abs(yhi)) - f.clip) <= slack)
    assert np.all(np.abs(ylo - (lo - r) / f.scale) <= slack)
    np.testing.assert_array_equal(f.weights, f.clip**-2.0)  # the same operation
    np.testing.assert_allclose(f.grid, (AGES - 1) / 17, rtol=0, atol=1e-15)  # one rounding of a value <= 1


def test_reference_is_the_least_squares_fit_of_the_band_midpoint():
    f = frame(6)
    lo, hi = band()  # linear in age: H_6 holds it exactly
    # a consistent least-squares fit, backward stable: residual γ_{8(T+m)}·||Φ||·||θ||, the product
    # γ_m·|Φ||θ|, the midpoint one rounding
    Phi, ref = f.geometry.Phi, f.reference
    atol = (gamma(8 * (AGES.size + 6)) * np.linalg.norm(Phi, 2) * np.linalg.norm(ref)
            + product_atol(Phi, ref) + gamma(1) * (lo + hi) / 2)
    assert np.all(np.abs(f.geometry.values(f.reference) - (lo + hi) / 2) <= atol)


def test_radius_is_the_l2_norm_of_the_interpolated_clip():
    f = frame(5)

    def c_hat(t):  # constant beyond the ends, like the module
        return np.interp(t, f.grid, f.clip)

    ref, err = integrate.quad(lambda t: c_hat(t) ** 2, 0, 1, points=f.grid, limit=200)
    # quad's own error estimate on quadratic pieces, and the closed form's sum of 3T terms; the root halves
    assert f.radius == pytest.approx(np.sqrt(ref), rel=err / ref + gamma(3 * AGES.size + 8), abs=0)
    # a grid that stops short of 1 extends the last bound to the end
    lo, hi = band()
    g = PublicFrame(LegendreSpace(3), AGES[:-2], Domain(1, 18), lo[:-2], hi[:-2])
    ref2, err2 = integrate.quad(lambda t: np.interp(t, g.grid, g.clip) ** 2, 0, 1, points=g.grid, limit=200)
    assert g.radius == pytest.approx(np.sqrt(ref2), rel=err2 / ref2 + gamma(3 * AGES.size + 8), abs=0)


def test_curves_inside_the_band_have_norm_at_most_radius():
    f = frame(6)
    lo, hi = band()
    rng = np.random.default_rng(7)
    # random curves in H_6 scaled to stay inside the band at a fine set of ages
    fine = np.linspace(1, 18, 2001)
    lo_f, hi_f = np.interp(fine, AGES, lo), np.interp(fine, AGES, hi)
    r_f = f.space.evaluate(f.reference, f.domain.to_unit(fine))
    half_f = np.maximum(hi_f - r_f, r_f - lo_f)
    for _ in range(50):
        theta = rng.standard_normal(6)
        y = f.space.evaluate(theta, f.domain.to_unit(fine))
        theta *= 0.999 * np.min(half_f / f.scale / np.abs(y))
        assert np.linalg.norm(theta) <= f.radius


def test_values_derivative_and_error_in_study_units():
    f = frame(6)
    rng = np.random.default_rng(3)
    X = f.lower + rng.random((40, AGES.size)) * (f.upper - f.lower)
    Y = f.to_unit(X)
    coef = f.geometry.coef_from_values(Y)
    # values map back: a curve in H_6 is recovered exactly at the design points
    exact = f.values(np.zeros(6), AGES) + 0.0
    P = f.space.basis(f.domain.to_unit(AGES))
    # two products of the same coefficients with the basis at the same points: γ_m·|θ||φ| each
    assert np.all(np.abs(exact - f.geometry.values(f.reference)) <= 2 * product_atol(P, f.reference))
    # means commute: r + scale·θ̄ against the mean of r + scale·θ_i, through the basis (γ_{n+m+4})
    atol = gamma(coef.shape[0] + 6 + 4) * ((np.abs(f.reference) + f.scale * np.abs(coef).max(0)) @ np.abs(P).T)
    assert np.all(np.abs(f.values(coef.mean(0), AGES) - f.values(coef, AGES).mean(0)) <= atol)  # means commute
    h = 1e-5
    a = np.array([3.0, 9.0, 14.5])
    fd = (f.values(coef[0], a + h) - f.values(coef[0], a - h)) / (2 * h)
    # in age units: t = (x − 1)/17, so f''' carries 17⁻³; the values are of size |r| + scale·|θ|·φ
    c_full = f.reference + f.scale * coef[0]
    fmax = np.abs(c_full) @ np.sqrt(2 * np.arange(1, 7) - 1)
    atol = _fd_atol(c_full, 6, h, fmax, _d3(c_full, 6) / 17**3) + gamma(4) * fmax * 17 / h  # a ± h rounds
    assert np.all(np.abs(f.derivative(coef[0], a) - fd) <= atol)
    # RMS error over the ages = scale * ||Δθ||, checked by quadrature in age
    d = coef[0] - coef[1]
    num, err = integrate.quad(lambda x: (f.values(coef[0], x) - f.values(coef[1], x))[0] ** 2, 1, 18,
                              limit=200)
    # quad's estimate; the difference of two full values (size |r| + scale·|θ|·φ) cancels down to Δf:
    # γ_{4m²} of their size, against the RMS of Δf
    size = (2 * np.abs(f.reference) + f.scale * (np.abs(coef[0]) + np.abs(coef[1]))) @ np.sqrt(2 * np.arange(1, 7) - 1)
    rms = np.sqrt(num / 17)
    rel = err / num + gamma(4 * 36) * size / rms + gamma(16)
    assert f.rms_error(coef[0], coef[1]) == pytest.approx(rms, rel=rel, abs=0)
    assert f.rms_error(coef[0], coef[1]) == pytest.approx(f.scale * np.linalg.norm(d), rel=gamma(6 + 4), abs=0)


def test_frame_works_with_both_pipelines_and_a_release():
    f = frame(6)
    rng = np.random.default_rng(11)
    X = f.lower + rng.random((30, AGES.size)) * (f.upper - f.lower)
    Y = f.to_unit(X)
    rel = dpfda.ptf(Y, f.grid, f.space, f.radius, 1.0, rng, clip=f.clip, weights=f.weights)
    P = f.space.basis(f.domain.to_unit(AGES))  # the release's evaluation and the coefficients': γ_m each
    np.testing.assert_allclose(f.values(rel, AGES), f.values(rel.coef, AGES), rtol=0,
                               atol=2 * product_atol(f.reference + f.scale * rel.coef, P.T).max())
    rel2 = dpfda.ftp(Y, f.grid, f.space, f.radius, 1.0, rng)
    assert f.values(rel2, [1, 18]).shape == (2,)
    assert np.all(np.abs(Y) <= f.clip + _map_slack(f))


EXTREMES = [1.5e308, -1.5e308, np.finfo(float).max, -np.finfo(float).max, 1e300, 2.0**-1074]


@pytest.mark.parametrize("extreme", EXTREMES)
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
def test_one_extreme_record_cannot_decide_whether_a_release_happens(extreme, pipeline):
    """The map used to overflow (1.5e308 - 1.25)/0.75 = inf, so one finite
    record made PTF refuse while its neighbour released.  Both neighbours must release, and
    their mapped curves differ in that one record only, within the band."""
    f = PublicFrame(LegendreSpace(2), np.linspace(1, 5, 5), Domain(1, 5), 0.5, 2.0)
    X = np.ones((10, 5))
    for row, col in ((0, 2), (3, slice(None))):  # one value of a record, or the whole record
        Xn = X.copy()
        Xn[row, col] = extreme
        Y, Yn = f.to_unit(X), f.to_unit(Xn)
        assert np.all(np.isfinite(Yn)) and np.all(np.abs(Yn) <= f.clip + _map_slack(f))
        assert np.array_equal(np.delete(Y, row, axis=0), np.delete(Yn, row, axis=0))
        kw = dict(clip=f.clip, weights=f.weights) if pipeline == "ptf" else {}
        run = getattr(dpfda, pipeline)
        rels = [run(Z, f.grid, f.space, f.radius, 1.0, np.random.default_rng(0), **kw) for Z in (Y, Yn)]
        assert all(np.all(np.isfinite(r.coef)) for r in rels)


def test_to_unit_changes_nothing_inside_the_band_and_clips_outside_it():
    f = frame(6)
    lo, hi = band()
    r = f.geometry.values(f.reference)
    rng = np.random.default_rng(12)
    inside = lo + rng.random((20, AGES.size)) * (hi - lo)
    assert np.array_equal(f.to_unit(inside), (inside - r) / f.scale)  # bit for bit the old map
    # beyond the band a value counts as the band's edge (about r, in the study's units)
    half = f.scale * f.clip
    far = np.stack([r + 3 * half, r - 1e9 * half, np.full(AGES.size, 1.7e308)])
    assert np.all(np.abs(f.to_unit(far) - np.stack([f.clip, -f.clip, f.clip])) <= _map_slack(f))
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        f.to_unit(np.full((1, AGES.size), np.inf))


def test_domain_and_frame_name_numbers_beyond_the_float_range():
    with pytest.raises(ValueError, match="stop must be a finite number within the float64 range"):
        Domain(1, 10**400)
    for lower, upper in (([-1.7e308, 1e308], 1.7e308), (-1.7e308, [-1e308, 1.7e308])):
        with pytest.raises(ValueError, match="lower and upper: the band .* beyond the float64 range"):
            PublicFrame(LegendreSpace(1), [0.0, 1.0], Domain(0, 1), lower, upper)
    wide = PublicFrame(LegendreSpace(2), [0.0, 1.0], Domain(0, 1), -1.7e308, 1.7e308)  # representable
    assert np.all(np.isfinite(wide.to_unit(np.full((1, 2), -np.finfo(float).max))))


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(space=KernelSpace(gaussian_kernel(0.2))), TypeError, "no fitting radius"),
    (dict(domain=(1, 18)), TypeError, "domain must be a dpfda Domain"),
    (dict(lower=np.zeros(5)), ValueError, "lower must be a scalar or a vector of length T=31"),
    (dict(upper=50.0), ValueError, "upper must be > lower at every point; at 1 "),
    (dict(points=AGES[::-1]), ValueError, "strictly increasing"),
    (dict(points=AGES + 1), ValueError, r"age must lie in \[1, 18\]"),
    (dict(space=LegendreSpace(40)), dpfda.AssumptionError, "A.3"),
    (dict(lower=np.nan), ValueError, "lower must hold finite values"),
])
def test_frame_rejects_bad_input(kwargs, err, match):
    lo, hi = band()
    args = dict(space=LegendreSpace(6), points=AGES, domain=Domain(1, 18, "age"), lower=lo, upper=hi)
    args.update(kwargs)
    with pytest.raises(err, match=match):
        PublicFrame(**args)


def test_frame_rejects_data_of_the_wrong_shape_and_coefficients_of_the_wrong_length():
    f = frame(6)
    with pytest.raises(ValueError, match="grid has 31 points"):
        f.to_unit(np.zeros((4, 30)))
    with pytest.raises(ValueError, match="last axis must have length m=6"):
        f.values(np.zeros(5), [2.0])
    with pytest.raises(ValueError, match=r"age must lie in \[1, 18\]"):
        f.derivative(np.zeros(6), [19.0])


def test_smallest_dimension_is_the_first_m_within_tolerance():
    grid = np.linspace(0, 1, 12)
    curve = 3 * grid**2 - grid  # a quadratic: H_3 reproduces it, H_2 does not
    m, misfit = realdata.smallest_dimension(grid, curve, tol=1e-9, m_max=6)
    assert m == 3 and set(misfit) == set(range(1, 7))
    assert misfit[2] > 1e-3 and misfit[3] < 1e-9
    assert realdata.smallest_dimension(grid, curve, tol=10.0)[0] == 1


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(tol=0.0), ValueError, "tol must be > 0"),
    (dict(tol=1e-3, m_max=13), ValueError, "m_max must lie in 1..T=12"),
    (dict(tol=1e-3, m_max=2.0), TypeError, "m_max must be an integer"),
    (dict(tol=1e-30, m_max=2), ValueError, "no m <= m_max=2"),
])
def test_smallest_dimension_rejects_bad_input(kwargs, err, match):
    grid = np.linspace(0, 1, 12)
    with pytest.raises(err, match=match):
        realdata.smallest_dimension(grid, np.exp(grid), **kwargs)


# --- curves on their own points, Fourier and kernel spaces -------------------------------


def _own_points_curves(X, points, domain, drop):
    """X (n, T) on ``points``, each subject without the points listed in ``drop[i]``."""
    keep = [np.setdiff1d(np.arange(points.size), d) for d in drop]
    return dpfda.Curves([X[i, k] for i, k in enumerate(keep)], [points[k] for k in keep], domain)


def test_curves_on_their_own_points_are_mapped_by_the_band_at_their_points():
    lo, hi = band()
    f = frame(6)
    rng = np.random.default_rng(21)
    X = lo + rng.random((6, AGES.size)) * (hi - lo)
    X[0, 3] = 1e9  # far beyond the band: clipped to its edge, in that record alone
    drop = [[0], [5, 6], [], [30], [10, 11, 12], [1]]
    own = _own_points_curves(X, AGES, (1, 18), drop)
    mapped = f.to_unit(own)
    assert not mapped.common and mapped.domain == (0.0, 1.0) and mapped.n == 6
    for (t, y), (t0, x) in zip(mapped.subjects(), own.subjects()):
        assert np.array_equal(t, t0)  # the same points (on [0, 1])
        r = f.space.evaluate(f.reference, t)  # independent of the module: r and ĉ at t
        half = f.scale * np.interp(t, f.grid, f.clip)
        np.testing.assert_allclose(y, (np.clip(x, r - half, r + half) - r) / f.scale, rtol=0, atol=1e-13)
        assert np.all(np.abs(y) <= np.interp(t, f.grid, f.clip) * (1 + 1e-12))
    # a subject on the frame's own points is mapped as on the grid (to rounding)
    grid_map = f.to_unit(X)
    np.testing.assert_allclose(mapped.subjects()[2][1], grid_map[2], rtol=0, atol=1e-13)


def test_a_common_grid_curves_on_the_frames_points_maps_bit_for_bit_as_the_array():
    lo, hi = band()
    f = frame(6)
    X = lo + np.random.default_rng(22).random((5, AGES.size)) * (hi - lo)
    mapped = f.to_unit(dpfda.Curves(X, AGES, (1, 18)))
    assert mapped.common and np.array_equal(mapped.values, f.to_unit(X)) and np.array_equal(mapped.grid, f.grid)
    with pytest.raises(ValueError, match="is not the frame's"):
        f.to_unit(dpfda.Curves(X, AGES, (0, 18)))


def test_a_constant_band_on_its_own_points_gives_the_wide_release():
    """A band constant over the domain: r is its midpoint, ĉ = 1 and B' = 1, whatever points the
    band is given at; FTP on the days' own points then releases what FTP on the grid releases."""
    space = dpfda.FourierSpace(5)
    hours = np.arange(24.0)
    domain = Domain(0, 24, "hour")
    rng = np.random.default_rng(23)
    X = 15 + 5 * np.sin(2 * np.pi * (hours - 9) / 24) + rng.normal(0, 2, (200, 24))
    on_grid = PublicFrame(space, hours, domain, -30, 45)
    layout = PublicFrame(space, np.linspace(0, 24, 101), domain, -30, 45)  # the CLI's layout grid
    # r is the consistent least-squares fit of the constant midpoint 7.5: its values within dr of it (the
    # residual bound of test_reference_is_the_least_squares_fit_of_the_band_midpoint); the half-widths
    # 45 − r, r + 30 round once (γ₁·45): scale within dr + γ₁·45 of 37.5; ĉ = half/scale lies in
    # [1 − η, 1] with η = (dr + 2γ₁·45)/37.5 + u, and the radius's sum of 3T terms adds γ_{3T+8}
    for f in (on_grid, layout):
        Phi, ref = f.geometry.Phi, f.reference
        res = (gamma(8 * (f.grid.size + 5)) * np.linalg.norm(Phi, 2) * np.linalg.norm(ref)
               + product_atol(Phi, ref) + gamma(1) * 7.5)
        eta = (res.max() + 2 * gamma(1) * 45) / 37.5 + gamma(1)
        assert f.scale == pytest.approx(37.5, rel=(res.max() + gamma(1) * 45) / 37.5, abs=0)
        assert f.radius == pytest.approx(1.0, rel=eta + gamma(3 * f.grid.size + 8), abs=0)
    # off the grid: the coefficients within ‖res‖/σ_min(Φ) of the exact fit, then one product with φ(t)
    phi_t = layout.space.evaluate(np.eye(5), [0.0, 0.3])
    coef_err = np.linalg.norm(res) / np.linalg.svd(Phi, compute_uv=False)[-1]
    off = np.abs(layout.space.evaluate(layout.reference, [0.0, 0.3]) - 7.5)
    assert np.all(off <= np.linalg.norm(phi_t, axis=0) * coef_err + product_atol(ref, phi_t))
    own = layout.to_unit(dpfda.Curves(X, hours, (0, 24)).on_grid(hours / 24))  # a common grid off the layout
    wide = dpfda.ftp(on_grid.to_unit(X), on_grid.grid, space, on_grid.radius, 1.0, np.random.default_rng(5))
    long = dpfda.ftp(own, layout.grid, space, layout.radius, 1.0, np.random.default_rng(5))
    # the same noise; the means of the fits differ by rounding (two fitting paths), far below σ
    np.testing.assert_allclose(long.coef, wide.coef, rtol=0, atol=1e-12)
    np.testing.assert_allclose(layout.values(long, [0, 6, 12]), on_grid.values(wide, [0, 6, 12]), rtol=0,
                               atol=1e-9)


def test_a_kernel_frame_takes_a_given_radius_and_centres_on_the_interpolated_midpoints():
    lo, hi = band()
    pts, lo, hi = AGES[::5], lo[::5], hi[::5]  # 7 ages: K_T well above the eigenvalue floor
    space = KernelSpace(gaussian_kernel(0.2))
    f = PublicFrame(space, pts, Domain(1, 18, "age"), lo, hi, radius=60.0)
    mid = (lo + hi) / 2
    assert np.array_equal(f.reference, mid) and f.radius == 60.0 / f.scale
    half = np.maximum(hi - mid, mid - lo)
    assert f.scale == half.max() and np.array_equal(f.clip, half / half.max())
    assert "given" in f.radius_rule
    X = lo + np.random.default_rng(24).random((30, pts.size)) * (hi - lo)
    Y = f.to_unit(X)
    np.testing.assert_allclose(Y, (X - mid) / f.scale, rtol=0, atol=1e-14)
    rel = dpfda.ftp(Y, f.grid, space, f.radius, 1.0, np.random.default_rng(6))
    on_grid = f.values(rel, pts)  # r + scale·f, f the release's own evaluation
    np.testing.assert_allclose(on_grid, mid + f.scale * rel(f.grid), rtol=0, atol=1e-9)
    x = np.array([1.5, 7.0])  # between the points r is the interpolated midpoint
    np.testing.assert_allclose(f.values(rel, x), np.interp(x, pts, mid) + f.scale * rel(f.domain.to_unit(x)),
                               rtol=0, atol=1e-9)
    with pytest.raises(TypeError, match="orthonormal"):
        f.rms_error(np.zeros(7), np.zeros(7))


def test_a_given_radius_overrides_the_bands_bound_and_must_be_positive():
    lo, hi = band()
    f = PublicFrame(LegendreSpace(6), AGES, Domain(1, 18, "age"), lo, hi, radius=10.0)
    assert f.radius == 10.0 / f.scale and f.scale == frame(6).scale
    assert "sqrt(∫ ĉ²)" in frame(6).radius_rule
    for bad, err in ((0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError), ("1", TypeError)):
        with pytest.raises(err, match="radius"):
            PublicFrame(LegendreSpace(6), AGES, Domain(1, 18, "age"), lo, hi, radius=bad)


def test_each_subject_on_its_own_points_is_mapped_alone_bit_for_bit():
    """A subject's mapped values are the same bits alone as inside any batch: other subjects
    (extreme, sharing its points or not, before or after it) never change its map."""
    lo, hi = band()
    f = frame(6)
    rng = np.random.default_rng(24)
    X = lo + rng.random((8, AGES.size)) * (hi - lo)
    X[1] *= 1e300  # clipped to the band
    X[4] = -X[4] * 1e-300
    drop = [[0], [0], [], [30], [10, 11, 12], [1], [0], list(range(20))]  # 0, 1 and 6 share points
    own = _own_points_curves(X, AGES, (1, 18), drop)
    batch = f.to_unit(own).subjects()
    for i in range(own.n):
        for order in (np.arange(own.n), rng.permutation(own.n)):
            others = [j for j in order if j != i]
            picked = [i, *others[:3]] if i % 2 else [*others[:4], i]
            sub = _own_points_curves(X[picked], AGES, (1, 18), [drop[j] for j in picked])
            t, y = f.to_unit(sub).subjects()[picked.index(i)]
            assert np.array_equal(t, batch[i][0])
            assert np.array_equal(y.view(np.uint64), batch[i][1].view(np.uint64)), i
        alone = f.to_unit(_own_points_curves(X[[i]], AGES, (1, 18), [drop[i]])).subjects()[0][1]
        assert np.array_equal(alone.view(np.uint64), batch[i][1].view(np.uint64)), i
