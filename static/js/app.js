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
