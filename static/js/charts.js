// Vega-Lite charts under the content security policy. A chart is a box
// <div data-chart="ID"> plus <script type="application/json" id="ID"> holding its spec
// (templates/partials/chart.html; the specs are built by studies/services/analysis/charts.py).
// The vendored libraries (static/vendor, scripts/vendor_charts.sh) load on first need,
// from the URLs on this script's data-* attributes; charts are drawn on load and after
// every htmx swap. Vega evaluates its expressions with the CSP-safe interpreter (no
// eval / Function), vega-embed injects no <style> (its CSS lives in static/css/app.css)
// and its only actions are the SVG and PNG downloads.
(function () {
  "use strict";
  const self = document.currentScript;
  let libraries = null;

  function load(src) {
    return new Promise(function (resolve, reject) {
      const script = document.createElement("script");
      script.src = src;
      script.addEventListener("load", resolve);
      script.addEventListener("error", function () {
        reject(new Error("could not load " + src));
      });
      document.head.appendChild(script);
    });
  }

  function ready() {
    if (libraries === null) {
      const urls = self.dataset;
      libraries = load(urls.vega)
        .then(function () { return load(urls.vegaLite); })
        .then(function () {
          return Promise.all([load(urls.vegaEmbed), load(urls.vegaInterpreter)]);
        });
    }
    return libraries;
  }

  function options(box) {
    return {
      ast: true, // compile expressions to an AST and interpret them: no eval under the CSP
      expr: window.vegaInterpreter.expressionInterpreter,
      renderer: "svg",
      defaultStyle: false, // vega-embed would add a <style> element: the CSP forbids it
      tooltip: { disableDefaultStyle: true }, // likewise for the tooltip's <style>
      actions: { export: { svg: true, png: true }, source: false, compiled: false, editor: false },
      downloadFileName: box.id || "chart",
      scaleFactor: { png: 2 },
    };
  }

  function draw(box) {
    const block = document.getElementById(box.getAttribute("data-chart"));
    if (!block) {
      return;
    }
    box.setAttribute("data-drawn", "pending");
    window.vegaEmbed(box, JSON.parse(block.textContent), options(box)).then(
      function () { box.setAttribute("data-drawn", "yes"); },
      function (error) {
        box.setAttribute("data-drawn", "failed");
        box.textContent = "The chart could not be drawn: " + error.message;
        console.error(error);
      }
    );
  }

  function drawAll() {
    const boxes = document.querySelectorAll("[data-chart]:not([data-drawn])");
    if (boxes.length === 0) {
      return;
    }
    ready().then(function () { boxes.forEach(draw); }, function (error) {
      boxes.forEach(function (box) { box.textContent = error.message; });
    });
  }

  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:afterSettle", drawAll);
})();
