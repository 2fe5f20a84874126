// Small behaviours htmx does not cover: filtering (and picking from) the bank list, confirming destructive
// forms, copying a revealed secret. Everything works without them, only less conveniently.
"use strict";

document.addEventListener("input", (event) => {
  const filter = event.target.closest("[data-filter-options]");
  if (!filter) return;
  const select = document.querySelector(filter.dataset.filterOptions);
  if (!select) return;
  const term = filter.value.trim().toLowerCase();
  let shown = 0;
  for (const option of select.options) {
    const match = option.text.toLowerCase().includes(term);
    option.hidden = !match;
    if (match) shown += 1;
  }
  const count = document.getElementById(filter.getAttribute("aria-describedby"));
  if (count) count.textContent = term ? `${shown} of ${select.options.length} banks match` : `${select.options.length} banks`;
});

// Enter in the bank search picks the first bank it shows and moves to the list; it never
// submits the payout form around it (whose other fields may not be filled in yet).
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter") return;
  const filter = event.target.closest("[data-filter-options]");
  if (!filter) return;
  event.preventDefault();
  const select = document.querySelector(filter.dataset.filterOptions);
  const first = select && [...select.options].find((option) => !option.hidden);
  if (!first) return;
  select.value = first.value;
  select.focus();
  const count = document.getElementById(filter.getAttribute("aria-describedby"));
  if (count) count.textContent = `${first.text} selected`;
});

document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  source.select();
  navigator.clipboard?.writeText(source.value).then(() => { button.textContent = "Copied"; });
});

// Filters left empty stay out of the URL htmx pushes (?q=abc rather than ?q=abc&status=&kind=...).
document.addEventListener("htmx:configRequest", (event) => {
  if (event.detail.verb !== "get") return;
  const params = event.detail.parameters;
  for (const name of [...(params.keys ? params.keys() : Object.keys(params))]) {
    const value = params.get ? params.get(name) : params[name];
    if (value === "") params.delete ? params.delete(name) : delete params[name];
  }
});

// After htmx swaps in a panel's next step or result, focus goes to what it marks
// (data-focus-after-swap: the next action, the result, the field in error), not back to the top
// of the page. The mark is removed once used, so later swaps elsewhere (polling) leave focus alone.
document.addEventListener("DOMContentLoaded", () => {
  for (const marked of document.querySelectorAll("[data-focus-after-swap]")) {
    marked.removeAttribute("data-focus-after-swap");  // a full page load keeps the browser's focus
  }
  for (const marked of document.querySelectorAll("[data-focus-if-lost]")) {
    marked.removeAttribute("data-focus-if-lost");
  }
  for (const marked of document.querySelectorAll("[data-announce]")) {
    marked.removeAttribute("data-announce");  // nor is a loaded page read out twice
  }
});

// What a swap brought is read out by screen readers through the one live region of the page
// (#announcer): the text of data-announce, or of the marked element. The region is emptied
// first, so the same text after the next swap is read out again.
document.addEventListener("htmx:afterSettle", () => {
  const announced = document.querySelector("[data-announce]");
  const announcer = document.getElementById("announcer");
  if (!announced || !announcer) return;
  const text = (announced.dataset.announce || announced.textContent).replace(/\s+/g, " ").trim();
  announced.removeAttribute("data-announce");
  announcer.textContent = "";
  window.setTimeout(() => { announcer.textContent = text; }, 50);
});
document.addEventListener("htmx:afterSettle", () => {
  const next = document.querySelector("[data-focus-after-swap]");
  if (!next) return;
  next.removeAttribute("data-focus-after-swap");
  next.focus();
});
// A swap the user did not ask for (polling) moves focus only when it removed the focused element:
// to what it marks (data-focus-if-lost, its result), rather than to the top of the page.
document.addEventListener("htmx:afterSettle", () => {
  for (const marked of document.querySelectorAll("[data-focus-if-lost]")) {
    marked.removeAttribute("data-focus-if-lost");
    if (!document.activeElement || document.activeElement === document.body) marked.focus();
  }
});

// The holder's name as the provider names the account ([data-account-name], swapped in by htmx)
// fills the holder field when it is still empty, so it is never typed twice; on the review, the
// Confirm button waits for the name.
document.addEventListener("htmx:afterSwap", (event) => {
  const box = event.target;
  if (!box.matches || !box.matches("[data-account-name]")) return;
  const named = box.querySelector("[data-holder]");
  if (!named) return;
  if (box.id === "account-name") {
    const holder = document.getElementById("holder");
    if (holder && !holder.value.trim()) holder.value = named.dataset.holder;
    return;
  }
  const confirm = document.getElementById("confirm-payout");
  if (confirm) {
    confirm.disabled = false;
    confirm.removeAttribute("aria-describedby");
  }
});

// A filter form sent with GET (data-drop-empty) leaves its empty fields out of the URL, so a
// shared link names only the filters that are set (/audit?action=note.add, not ...&user=&from=).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.matches("form[data-drop-empty]")) return;
  event.preventDefault();
  const params = new URLSearchParams();
  for (const [name, value] of new FormData(form)) {
    if (value !== "") params.append(name, value);
  }
  const query = params.toString();
  // getAttribute: a field named "action" hides the form's own .action property.
  window.location.assign(form.getAttribute("action") + (query ? "?" + query : ""));
});
