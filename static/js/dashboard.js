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

// A part of a form swapped while the user types (data-keep-typed: the payout's destination,
// reloaded when the method changes) keeps what was typed after its request left: a field the
// answer brings back empty gets the value it had just before the swap.
const typedBeforeSwap = new Map();
document.addEventListener("htmx:beforeSwap", (event) => {
  const part = event.detail.target;
  typedBeforeSwap.clear();
  if (!part.matches || !part.matches("[data-keep-typed]")) return;
  for (const input of part.querySelectorAll("input[id]:not([type=hidden])")) {
    if (input.value) typedBeforeSwap.set(input.id, input.value);
  }
});
document.addEventListener("htmx:afterSwap", () => {
  for (const [id, value] of typedBeforeSwap) {
    const input = document.getElementById(id);
    if (input && !input.value) input.value = value;
  }
  typedBeforeSwap.clear();
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

// The live/sandbox switch keeps this page's search and filters: a link to this page's twin
// (data-keeps-query) takes the query string htmx has pushed since the page loaded (the
// list's keyset cursors, which name rows of one mode, stay behind).
function keepQueryOnSwitch() {
  const params = new URLSearchParams(window.location.search);
  for (const name of ["older", "newer", "page"]) params.delete(name);
  for (const link of document.querySelectorAll(".mode-switch a[data-keeps-query]")) {
    const url = new URL(link.href);
    url.search = params.toString();
    link.href = url.toString();
  }
}
document.addEventListener("htmx:pushedIntoHistory", keepQueryOnSwitch);
document.addEventListener("htmx:replacedInHistory", keepQueryOnSwitch);

// The top bar's search (base.html): "/" focuses it from anywhere but a field; its options come
// from htmx; the first is active, arrow keys move, Enter opens the active one (or, with none,
// the transactions list with the search), Escape closes the options.
const quickSearch = () => document.getElementById("quick-search");
const quickResults = () => document.getElementById("quick-results");

function quickOptions() {
  return [...(quickResults()?.querySelectorAll("[role=option]") || [])];
}

function quickActivate(option) {
  const input = quickSearch();
  for (const other of quickOptions()) other.setAttribute("aria-selected", other === option ? "true" : "false");
  if (option) {
    input.setAttribute("aria-activedescendant", option.id);
    option.scrollIntoView({ block: "nearest" });
  } else {
    input.removeAttribute("aria-activedescendant");
  }
}

function quickClose() {
  const input = quickSearch();
  const list = quickResults();
  if (!input || !list) return;
  list.hidden = true;
  input.setAttribute("aria-expanded", "false");
  quickActivate(null);
}

function isTypingTarget(element) {
  return element && (element.isContentEditable || element.matches("input, textarea, select"));
}

document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  if (isTypingTarget(event.target)) return;
  const input = quickSearch();
  if (!input) return;
  event.preventDefault();
  input.focus();
  input.select();
});

document.addEventListener("htmx:afterSwap", (event) => {
  if (event.target !== quickResults()) return;
  const options = quickOptions();
  const input = quickSearch();
  if (!options.length || !input.value.trim()) {
    quickClose();
    return;
  }
  quickResults().hidden = false;
  input.setAttribute("aria-expanded", "true");
  quickActivate(options[0]);
});

document.addEventListener("input", (event) => {
  if (event.target === quickSearch() && !event.target.value.trim()) quickClose();
});

document.addEventListener("keydown", (event) => {
  const input = quickSearch();
  if (event.target !== input) return;
  const options = quickOptions();
  const open = !quickResults().hidden && options.length > 0;
  const active = options.findIndex((option) => option.getAttribute("aria-selected") === "true");
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    if (!open) return;
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    quickActivate(options[(active + step + options.length) % options.length]);
  } else if (event.key === "Enter") {
    if (!open || active < 0) return;  // the form opens the transactions list with the search
    event.preventDefault();
    window.location.assign(options[active].dataset.href);
  } else if (event.key === "Escape" && open) {
    event.preventDefault();
    event.stopPropagation();
    quickClose();
  }
});

document.addEventListener("mousedown", (event) => {
  if (event.target.closest("#quick-results [role=option]")) event.preventDefault();  // keep focus
});
document.addEventListener("click", (event) => {
  const option = event.target.closest("#quick-results [role=option]");
  if (option) window.location.assign(option.dataset.href);
});
document.addEventListener("focusout", (event) => {
  if (event.target === quickSearch()) quickClose();
});

// Escape cancels a confirm step (the refund's confirm, the payout review, the cancel's
// confirm): it presses the step's way back ([data-escape-cancels]) when focus is in that step.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.defaultPrevented) return;
  const step = document.activeElement?.closest("form");
  const back = step?.querySelector("[data-escape-cancels]");
  if (!back) return;
  event.preventDefault();
  back.click();
});

// A link to a panel further down (the payment header's Refund) moves focus into it, to its
// first field, as well as scrolling there; without JavaScript the link still scrolls to it.
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-jump-focus]");
  if (!link) return;
  // The first of its selectors that finds something, in the order written.
  const target = link.dataset.jumpFocus.split(",").map((s) => document.querySelector(s.trim())).find(Boolean);
  if (!target) return;
  event.preventDefault();
  if (!target.matches("input, button, select, textarea, a[href]")) target.setAttribute("tabindex", "-1");
  target.focus();
  target.scrollIntoView({ block: "center" });
  if (target.select) target.select();
});
