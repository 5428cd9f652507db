// dk-mirror's browser: type-ahead search and the page tree opening in place.
// Plain script, served from /static (the CSP allows no inline script); every page works without
// it. Text from the server is only ever set as textContent, never parsed as HTML.
"use strict";

(function () {
  const DELAY_MS = 60; // wait for a pause in typing, not for every key of a fast typist
  const KIND_LABELS = { symbol: "API", page: "Page", heading: "Section", text: "Text" };

  function typeahead(box) {
    const input = box.querySelector("input[type=search]");
    const panel = box.querySelector(".typeahead-panel");
    const list = panel.querySelector("ul");
    const count = panel.querySelector(".typeahead-count");
    let active = -1;
    let timer = 0;
    let pending = null;
    let asked = "";

    function items() {
      return Array.from(list.querySelectorAll("li[role=option]"));
    }

    function close() {
      panel.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      active = -1;
    }

    function open() {
      panel.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }

    function select(index) {
      const all = items();
      if (!all.length) return;
      active = (index + all.length) % all.length;
      all.forEach((li, i) => li.setAttribute("aria-selected", i === active ? "true" : "false"));
      input.setAttribute("aria-activedescendant", all[active].id);
      all[active].scrollIntoView({ block: "nearest" });
    }

    function show(query, data) {
      list.textContent = "";
      data.results.forEach((hit, i) => {
        const li = document.createElement("li");
        li.id = "typeahead-" + i;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        li.className = "typeahead-item kind-" + hit.kind;
        const a = document.createElement("a");
        a.href = hit.url;
        a.tabIndex = -1;
        const kind = document.createElement("span");
        kind.className = "kind";
        kind.textContent = KIND_LABELS[hit.kind] || hit.kind;
        const label = document.createElement("span");
        label.className = "label";
        label.textContent = hit.label;
        const context = document.createElement("span");
        context.className = "context";
        context.textContent = hit.context;
        a.append(kind, label, context);
        li.append(a);
        list.append(li);
      });
      // The count is of the rows shown, so the two can never disagree.
      const shown = items().length;
      count.textContent = shown
        ? shown + (shown === 1 ? " match" : " matches") + " · Enter opens, Esc closes"
        : "No quick matches · Enter searches the full text";
      active = -1;
      input.removeAttribute("aria-activedescendant");
      open();
    }

    function ask() {
      const query = input.value.trim();
      if (query === asked) return;
      asked = query;
      if (pending) pending.abort();
      if (!query) {
        close();
        return;
      }
      pending = new AbortController();
      fetch("/typeahead?q=" + encodeURIComponent(query), { signal: pending.signal })
        .then((response) => (response.ok ? response.json() : null))
        .then((data) => {
          if (data && input.value.trim() === query) show(query, data);
        })
        .catch(() => {}); // aborted by the next keystroke, or the server went away: no list
    }

    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(ask, DELAY_MS);
    });
    input.addEventListener("focus", () => {
      if (input.value.trim() && items().length) open();
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (panel.hidden && items().length) open();
        select(active + (event.key === "ArrowDown" ? 1 : -1));
        event.preventDefault();
      } else if (event.key === "Enter" && !panel.hidden && active >= 0) {
        event.preventDefault();
        window.location.href = items()[active].querySelector("a").href;
      } else if (event.key === "Escape") {
        if (!panel.hidden) close();
        else input.blur();
        event.preventDefault();
      }
    });
    document.addEventListener("click", (event) => {
      if (!box.contains(event.target)) close();
    });
    return input;
  }

  function treeLink(url, label, count) {
    const a = document.createElement("a");
    a.href = url;
    a.textContent = label;
    if (count === undefined) return a;
    const span = document.createElement("span");
    span.className = "count";
    span.textContent = count.toLocaleString("en");
    return [a, document.createTextNode(" "), span];
  }

  function fillFolder(details, data) {
    const ul = details.querySelector("ul");
    ul.textContent = "";
    data.folders.forEach((folder) => {
      const li = document.createElement("li");
      li.className = "tree-folder";
      const sub = document.createElement("details");
      sub.dataset.prefix = folder.prefix;
      const summary = document.createElement("summary");
      summary.append(...treeLink(folder.url, folder.label, folder.count));
      sub.append(summary, document.createElement("ul"));
      li.append(sub);
      ul.append(li);
    });
    data.pages.forEach((page) => {
      const li = document.createElement("li");
      li.className = "tree-page";
      li.append(treeLink(page.url, page.label));
      ul.append(li);
    });
    if (data.more) {
      const li = document.createElement("li");
      li.className = "tree-more";
      li.append(treeLink(data.moreUrl, data.more.toLocaleString("en") + " more…"));
      ul.append(li);
    }
    details.dataset.loaded = "";
  }

  function tree(root) {
    // `toggle` does not bubble: listen in the capture phase for folders added later too.
    root.addEventListener(
      "toggle",
      (event) => {
        const details = event.target;
        if (!details.open || !details.dataset.prefix || "loaded" in details.dataset) return;
        fetch("/tree.json?prefix=" + encodeURIComponent(details.dataset.prefix))
          .then((response) => (response.ok ? response.json() : null))
          .then((data) => data && fillFolder(details, data))
          .catch(() => {}); // the "Open folder" link stays: it works without the script
      },
      true,
    );
  }

  const NARROW = "(max-width: 900px)"; // where style.css puts the tree above the page

  // Show the current page in the tree: scroll the tree (not the window) to it.
  function showCurrent(root) {
    const current = root.querySelector("[aria-current=page]");
    if (current && root.scrollHeight > root.clientHeight) {
      const offset = current.getBoundingClientRect().top - root.getBoundingClientRect().top;
      root.scrollTop += offset - root.clientHeight / 2;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const box = document.querySelector(".search-box");
    const input = box ? typeahead(box) : null;
    document.querySelectorAll(".sidetree").forEach((root) => {
      tree(root);
      const box = root.querySelector(".sidetree-box");
      // On a phone the page comes first: the tree is one tap away, above it.
      if (box && window.matchMedia(NARROW).matches) box.open = false;
      showCurrent(root);
      if (box) box.addEventListener("toggle", () => showCurrent(root));
    });
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
      if (event.key === "/" && input && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        input.focus();
        input.select();
      }
    });
  });
})();
