/* The MathJax 2 calls Thebe makes, answered by the book's own MathJax 3.
 *
 * Thebe 0.9 typesets LaTeX outputs of live cells with JupyterLab's MathJax 2 typesetter: it
 * loads the script at its `mathjaxUrl` (by default MathJax 2 from a CDN), then calls
 * MathJax.Hub.Config, MathJax.Hub.Register.StartupHook, MathJax.Hub.Configured and
 * MathJax.Hub.Queue(["Typeset", Hub, node]).
 * _ext/thebe_local.py points `mathjaxUrl` at this file instead. The page has already loaded
 * MathJax 3 from the book (Sphinx's mathjax_path), so this file only adds a `Hub` whose Queue
 * typesets the node with MathJax 3: nothing is fetched from anywhere else.
 */
(function () {
  "use strict";
  var MJ = window.MathJax = window.MathJax || {};
  if (MJ.Hub) return;  // a real MathJax 2, or this shim already installed
  // IPython's LaTeX outputs use $...$ and $$...$$; the book's MathJax 3 reads \(...\) and \[...\].
  function delimit(node) {
    var walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT), texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    texts.forEach(function (t) {
      t.nodeValue = t.nodeValue
        .replace(/\$\$([\s\S]+?)\$\$/g, "\\[$1\\]")
        .replace(/\$([^$\n]+?)\$/g, "\\($1\\)");
    });
  }
  function typeset(node) {
    var ready = MJ.startup && MJ.startup.promise ? MJ.startup.promise : Promise.resolve();
    return ready.then(function () {
      delimit(node);
      node.classList && node.classList.add("mathjax_process");
      return MJ.typesetPromise ? MJ.typesetPromise([node]) : null;
    }).catch(function (err) { console.warn("[dpfda] MathJax 3 could not typeset a live output:", err); });
  }
  MJ.Hub = {
    Config: function () {},
    Configured: function () {},
    Register: {StartupHook: function () {}, MessageHook: function () {}},
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var item = arguments[i];
        if (Array.isArray(item) && item[0] === "Typeset" && item[2]) typeset(item[2]);
      }
    }
  };
  MJ.Ajax = MJ.Ajax || {};
})();
