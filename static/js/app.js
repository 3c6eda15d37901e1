// Behaviour shared by every page, kept out of the templates: the content security policy
// allows no inline scripts or event-handler attributes.
(function () {
  "use strict";
  // <select data-autosubmit>: submit its form when the choice changes.
  document.addEventListener("change", function (event) {
    const field = event.target;
    if (field instanceof HTMLElement && field.hasAttribute("data-autosubmit") && field.form) {
      field.form.submit();
    }
  });
})();
