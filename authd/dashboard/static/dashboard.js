// sigops dashboard: the few behaviours the pages need beyond plain forms. Loaded as a file
// (the CSP allows no inline script); every page works without it, less live.
(function () {
  'use strict';
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.content : '';
  var root = document.documentElement;

  // Theme: the system's, unless the user picked one (kept in this browser only).
  try { var saved = localStorage.getItem('sigops-theme'); if (saved) root.dataset.theme = saved; } catch (e) {}
  function currentTheme() {
    if (root.dataset.theme) return root.dataset.theme;
    return window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }

  document.addEventListener('click', function (e) {
    var t = e.target.closest('[data-theme-toggle]');
    if (t) {
      var next = currentTheme() === 'dark' ? 'light' : 'dark';
      root.dataset.theme = next;
      try { localStorage.setItem('sigops-theme', next); } catch (err) {}
      document.dispatchEvent(new CustomEvent('sigops:theme', { detail: { theme: next } }));
      return;
    }
    // Copy buttons: data-copy names the element whose value or text is copied.
    var c = e.target.closest('[data-copy]');
    if (c) {
      var el = document.getElementById(c.dataset.copy);
      if (!el) return;
      var text = el.value !== undefined && el.tagName !== 'CODE' && el.tagName !== 'PRE' ? el.value : el.textContent.trim();
      var done = function () { c.dataset.copied = 'true'; c.textContent = 'Copied'; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { select(el); });
      } else { select(el); }
    }
  });
  function select(el) {
    if (el.select) { el.select(); return; }
    var r = document.createRange(); r.selectNodeContents(el);
    var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
  }

  // A form with data-confirm asks first (the server asks again for live orders).
  document.addEventListener('submit', function (e) {
    var f = e.target;
    if (f.dataset && f.dataset.confirm && !window.confirm(f.dataset.confirm)) e.preventDefault();
  }, true);

  // htmx requests carry the session's CSRF token.
  document.addEventListener('htmx:configRequest', function (e) { e.detail.headers['X-CSRF-Token'] = token; });

  // Live updates: the server announces a change to one of the user's bots; every element
  // with data-live-src that shows that bot (data-live-bots lists IDs; empty means any) is
  // fetched again and swapped in place.
  var pending = new Map();
  function refresh(bot) {
    document.querySelectorAll('[data-live-src]').forEach(function (el) {
      var bots = el.dataset.liveBots;
      if (bot && bots && bots.split(' ').indexOf(bot) < 0) return;
      if (pending.has(el)) return;
      pending.set(el, setTimeout(function () {
        pending.delete(el);
        if (!document.body.contains(el) || !window.htmx) return;
        // Each element is its own request's source: with one source for all (htmx's
        // default, the body) htmx drops the requests made while one is in flight, and all
        // but one of a page's fragments would keep showing the state before the change.
        htmx.ajax('GET', el.dataset.liveSrc, { source: el, target: el, swap: 'outerHTML' });
      }, 40));
    });
    document.dispatchEvent(new CustomEvent('sigops:live', { detail: { bot: bot } }));
  }
  var src = document.body.dataset.events;
  if (src && token && window.EventSource) {
    var es = new EventSource(src + '?csrf=' + encodeURIComponent(token));
    es.addEventListener('change', function (m) {
      var ev = {}; try { ev = JSON.parse(m.data); } catch (err) {}
      // An approval asked for or decided: the parts that show approvals (data-live-bots
      // "approvals": the header's badge, the Approvals page) are read again.
      refresh(ev.kind === 'approval' ? 'approvals' : (ev.botId || ''));
    });
    es.addEventListener('resync', function () { refresh(''); });
    es.addEventListener('open', function () { document.body.dataset.live = 'open'; });
  }
})();
