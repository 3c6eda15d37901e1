// Behaviour shared by every page, kept out of the templates: the content security policy
// allows no inline scripts or event-handler attributes.
(function () {
  "use strict";
  // Statistics that exist only at some levels or for some coefficients (correlations
  // pages): <option data-levels="sample dataset"> is offered at those levels only,
  // a control with data-levels / data-coefs / data-not-coefs is enabled only there.
  function words(element, name) {
    const value = element.getAttribute(name);
    return value === null ? null : value.split(" ");
  }
  function syncChoices(form) {
    const level = form.querySelector("select[name=level]");
    const coef = form.querySelector("select[name=coef]");
    if (!level || !coef) {
      return;
    }
    coef.querySelectorAll("option[data-levels]").forEach(function (option) {
      option.disabled = !words(option, "data-levels").includes(level.value);
    });
    form.querySelectorAll("input[data-coefs], select[data-levels]").forEach(function (field) {
      const levels = words(field, "data-levels");
      const coefs = words(field, "data-coefs");
      const notCoefs = words(field, "data-not-coefs");
      field.disabled = (levels !== null && !levels.includes(level.value)) ||
        (coefs !== null && !coefs.includes(coef.value)) ||
        (notCoefs !== null && notCoefs.includes(coef.value));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form").forEach(syncChoices);
  });
  document.addEventListener("concordia:choices", function () {
    document.querySelectorAll("form").forEach(syncChoices);
  });
  // <form data-confirm="question">: ask before a costly or stopping action is sent.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.hasAttribute("data-confirm") &&
        !window.confirm(form.getAttribute("data-confirm"))) {
      event.preventDefault();
    }
  });
  // <select data-autosubmit>: submit its form when the choice changes.
  document.addEventListener("change", function (event) {
    const field = event.target;
    if (field instanceof HTMLElement && field.form) {
      syncChoices(field.form);
    }
    if (field instanceof HTMLElement && field.hasAttribute("data-autosubmit") && field.form) {
      field.form.submit();
    }
  });
})();
// A filter form whose choices live in the URL (<form data-url-state>, swapped by htmx with
// hx-push-url): after Back or Forward, htmx restores the page's old body, but the form
// may show the choices of another entry. Set every named control from the URL again
// (absent: its data-default, else unchecked / the first option / empty).
(function () {
  "use strict";
  function syncFromUrl() {
    const query = new URLSearchParams(window.location.search);
    document.querySelectorAll("form[data-url-state]").forEach(function (form) {
      form.querySelectorAll("select[name], input[name]").forEach(function (field) {
        const value = query.get(field.name);
        const fallback = field.getAttribute("data-default");
        if (field.type === "checkbox") {
          field.checked = value !== null && value === field.value;
        } else if (field.tagName === "SELECT") {
          const wanted = value !== null ? value : fallback;
          const option = Array.from(field.options).find(function (o) { return o.value === wanted; });
          field.value = option ? option.value : (field.options[0] ? field.options[0].value : "");
        } else {
          field.value = value !== null ? value : (fallback !== null ? fallback : "");
        }
      });
    });
    document.dispatchEvent(new Event("concordia:choices"));  // the choices of that level
  }
  document.addEventListener("htmx:historyRestore", syncFromUrl);
  // a sort link pushes its URL: the form's hidden sort follows it
  document.addEventListener("htmx:pushedIntoHistory", function () {
    const sort = new URLSearchParams(window.location.search).get("sort") || "";
    document.querySelectorAll("form[data-url-state] input[type=hidden][name=sort]").forEach(
      function (field) { field.value = sort; });
  });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      syncFromUrl();
    }
  });
  // Matrix cells (<td data-keyboard-cell tabindex="0" hx-get>): Enter or Space opens the
  // drill-down, as a click does.
  document.addEventListener("keydown", function (event) {
    const cell = event.target;
    if (cell instanceof HTMLElement && cell.hasAttribute("data-keyboard-cell") &&
        (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      cell.click();
    }
  });
})();
// htmx keeps a copy of the page for Back and Forward and puts it back as HTML: a style
// attribute in that copy (a box the reader resized, an element a browser extension
// styled) would then be inline style, which the content security policy refuses. Leave
// such attributes out of the copy, and give the elements their looks back through the
// style object, which the policy allows, once the copy is taken.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeHistorySave", function (event) {
    const root = (event.detail && event.detail.historyElt) || document.body;
    const styled = Array.from(root.querySelectorAll("[style]"));
    const looks = styled.map(function (element) { return element.style.cssText; });
    styled.forEach(function (element) { element.removeAttribute("style"); });
    queueMicrotask(function () {
      styled.forEach(function (element, k) { element.style.cssText = looks[k]; });
    });
  });
})();
