// Keyboard control of the annotation page. A digit sets the focused aspect and moves
// on to the next one (with no aspect focused, it sets the first unanswered one), Tab or
// the up/down arrows move between aspects, left/right step the score, Enter submits,
// "s" opens the skip dialog, "p" goes back to the item answered before, "?" the
// shortcuts. Keys typed in the comment (or a menu) are theirs. Every new item starts on
// its first aspect. The server does every check. The disagreement review
// (templates/studies/partials/adjudicate.html) keeps the same markup, so these keys serve
// it too: #annotate[data-item], #answer-form, fieldset.aspect, input[data-key].
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const groups = () => Array.from(document.querySelectorAll("#annotate fieldset.aspect"));
  const focused = () => groups().find((g) => g.contains(document.activeElement));

  function focusGroup(index) {
    const all = groups();
    if (!all.length) return;
    const group = all[Math.max(0, Math.min(all.length - 1, index))];
    group.focus({ preventScroll: true });
    group.scrollIntoView({ block: "nearest" }); // inside the phone's answer bar too
  }

  const unanswered = () => groups().findIndex((g) => !g.querySelector("input:checked"));

  function pick(group, input) {
    if (!input) return;
    input.checked = true;
    group.classList.add("answered");
  }

  function step(group, delta) {
    const inputs = Array.from(group.querySelectorAll("input[type=radio]"));
    const at = inputs.findIndex((i) => i.checked);
    const next = at < 0 ? (delta > 0 ? 0 : inputs.length - 1) : at + delta;
    pick(group, inputs[Math.max(0, Math.min(inputs.length - 1, next))]);
  }

  // htmx binds swapped-in content when it settles (~20 ms later); bind it now, so that a
  // fast Enter still goes through htmx (without it the form posts normally, also fine).
  function submit(form) {
    if (window.htmx) window.htmx.process(form);
    form.requestSubmit();
  }

  function openSkip() {
    const dialog = $("#skip-dialog");
    if (!$("[data-skip]") || !dialog) return; // an answered item is changed, not skipped
    if (window.htmx) window.htmx.process(dialog);
    dialog.showModal();
    $("#skip-reason", dialog).focus();
  }

  function previous() {
    const link = $("#previous-item");
    if (!link) return;
    if (window.htmx) window.htmx.process(link);
    link.click();
  }

  function toggle(dialog) {
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("keydown", (event) => {
    const form = $("#answer-form");
    if (!form || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("dialog")) return; // the skip reason is typed there
    if (event.target.matches("textarea, input[type=text], select")) return; // the comment, a menu
    const group = focused();
    const index = groups().indexOf(group);
    const key = event.key;
    if (/^[0-9]$/.test(key)) {
      const at = index >= 0 ? index : Math.max(0, unanswered());
      const target = groups()[at];
      const input = target && target.querySelector(`input[data-key="${key}"]`);
      pick(target, input);
      if (input) focusGroup(at + 1); // the last aspect keeps the focus: Enter submits
    } else if (key === "ArrowDown" || key === "ArrowUp") {
      focusGroup(index < 0 ? 0 : index + (key === "ArrowDown" ? 1 : -1));
    } else if ((key === "ArrowLeft" || key === "ArrowRight") && group) {
      step(group, key === "ArrowRight" ? 1 : -1);
    } else if (key === "Enter") {
      if (event.target.matches("button, a, summary")) return; // let them do their own thing
      submit(form);
    } else if (key === "s" || key === "S") {
      openSkip();
    } else if (key === "p" || key === "P") {
      previous();
    } else if (key === "?") {
      toggle($("#shortcuts"));
    } else {
      return;
    }
    event.preventDefault();
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-skip]")) {
      openSkip();
    } else if (event.target.closest("[data-close]")) {
      event.target.closest("dialog").close();
    } else if (event.target.closest("[data-shortcuts]")) {
      toggle($("#shortcuts"));
    }
  });

  // Answers (422) and refusals (409) come back as the item with its message: show them.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status === 422 || status === 409) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  // htmx gives the focus back to the element with the focused one's id, which would be
  // the same aspect of the next item: a new item starts on its first aspect instead (a
  // rejected answer, the same item again, on its first unanswered one). This runs on
  // afterSwap, in the same task as the swap, so no key pressed meanwhile goes elsewhere.
  let shownItem = null;
  function settle() {
    const section = $("#annotate");
    if (!section || !$("#answer-form")) return;
    const item = section.dataset.item;
    if (item !== shownItem) {
      shownItem = item;
      if (section.getBoundingClientRect().top < 0) section.scrollIntoView();
      focusGroup(0);
    } else {
      focusGroup(Math.max(0, unanswered()));
    }
  }
  document.addEventListener("htmx:afterSwap", settle);
  document.addEventListener("DOMContentLoaded", settle);
})();
