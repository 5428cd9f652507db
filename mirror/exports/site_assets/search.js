/* dk-mirror static site search. Works from file:// : the index is plain scripts (see
   site_search.py), added as <script> tags, never fetch()ed. Results are built with
   textContent only, so nothing in the index is ever read as HTML. */
(function () {
  "use strict";
  var ROOT = "_dk/search/";
  var MAX_SHOWN = 50;
  var MAX_EXPANSIONS = 40; // completions of the word being typed
  var docs = null;
  var keys = null; // the shards there are
  var shards = {};
  var waiting = {};

  window.dkSearch = {
    docs: function (list, shardKeys) {
      docs = list;
      keys = {};
      shardKeys.forEach(function (k) { keys[k] = true; });
      settle("docs");
    },
    shard: function (key, terms) { shards[key] = terms; settle(key); }
  };

  function settle(key) {
    (waiting[key] || []).forEach(function (done) { done(); });
    delete waiting[key];
  }

  function load(key, file) {
    if (key === "docs" ? docs : shards[key]) { return Promise.resolve(); }
    return new Promise(function (resolve) {
      if (waiting[key]) { waiting[key].push(resolve); return; }
      waiting[key] = [resolve];
      var script = document.createElement("script");
      script.src = ROOT + file;
      // A shard that cannot be read (a damaged copy) matches nothing rather than hanging.
      script.onerror = function () { shards[key] = {}; settle(key); };
      document.head.appendChild(script);
    });
  }

  function words(text) {
    return (text.toLowerCase().match(/[\p{L}\p{N}\p{M}_]+/gu) || []).filter(function (w) {
      return w.length >= 2 && w.length <= 40;
    });
  }

  function shardKey(word) {
    var out = "";
    Array.from(word).slice(0, 2).forEach(function (c) {
      out += /[a-z0-9]/.test(c) ? c : "_" + c.codePointAt(0).toString(16);
    });
    return out;
  }

  function postings(word, prefix) {
    var terms = shards[shardKey(word)] || {};
    var found = {};
    var add = function (list, factor) {
      for (var i = 0; i < list.length; i += 2) {
        found[list[i]] = Math.max(found[list[i]] || 0, list[i + 1] * factor);
      }
    };
    if (terms[word]) { add(terms[word], 1); }
    if (prefix) {
      var more = Object.keys(terms).filter(function (t) {
        return t !== word && t.indexOf(word) === 0;
      }).sort().slice(0, MAX_EXPANSIONS);
      more.forEach(function (t) { add(terms[t], 0.5); });
    }
    return found;
  }

  function rank(query, typing) {
    var list = words(query);
    if (!list.length) { return []; }
    var scores = null;
    list.forEach(function (word, i) {
      var hits = postings(word, typing && i === list.length - 1);
      var df = Object.keys(hits).length;
      var idf = Math.log(1 + docs.length / (1 + df));
      var next = {};
      Object.keys(hits).forEach(function (doc) {
        if (scores === null || doc in scores) {
          next[doc] = (scores === null ? 0 : scores[doc]) + hits[doc] * idf;
        }
      });
      scores = next;
    });
    return Object.keys(scores).map(Number).sort(function (a, b) {
      return scores[b] - scores[a] || a - b;
    });
  }

  function show(query, ranked) {
    var count = document.getElementById("search-count");
    var results = document.getElementById("search-results");
    results.textContent = "";
    if (!words(query).length) { count.textContent = "Type two letters or more."; return; }
    var shown = ranked.slice(0, MAX_SHOWN);
    count.textContent = ranked.length === 1 ? "1 page" :
      ranked.length + " pages" + (ranked.length > shown.length ? ", the first " + shown.length + " shown" : "");
    shown.forEach(function (id) {
      var doc = docs[id];
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = doc[0];
      link.textContent = doc[1];
      link.className = "result-title";
      var host = document.createElement("span");
      host.className = "path";
      host.textContent = doc[2];
      item.appendChild(link);
      item.appendChild(host);
      if (doc[3]) {
        var about = document.createElement("span");
        about.className = "meta";
        about.textContent = doc[3];
        item.appendChild(about);
      }
      results.appendChild(item);
    });
  }

  var latest = 0;
  function search(query, typing) {
    var ticket = ++latest;
    return load("docs", "docs.js").then(function () {
      // Only shards that exist: a word no page has asks for no file.
      return Promise.all(words(query).map(shardKey).filter(function (k) { return keys[k]; })
        .map(function (k) { return load(k, k + ".js"); }));
    }).then(function () {
      if (ticket === latest) { show(query, rank(query, typing)); }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var input = document.getElementById("search-input");
    var query = new URLSearchParams(window.location.search).get("q") || "";
    input.value = query;
    var timer = null;
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { search(input.value, true); }, 80);
    });
    document.getElementById("search-form").addEventListener("submit", function (event) {
      event.preventDefault();
      search(input.value, false);
    });
    input.focus();
    if (query) { search(query, false); }
  });
})();
