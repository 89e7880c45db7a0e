// sigops charts: draws every .chart[data-chart] element with lightweight-charts (the
// vendored standalone build, global LightweightCharts) from the JSON at data-chart-src.
//   data-chart="candles": {candles:[{time,open,high,low,close}], markers:[...], lines:[...]}
//   data-chart="equity":  {series:[{name, points:[{time,value}]}]}
// After drawing it sets data-drawn="true", data-points (candles or points drawn) and
// data-markers. Colours follow the page's theme (CSS variables); a live event for the
// element's bot (data-live-bot) fetches its data again. Charts that htmx swaps in are drawn
// as they arrive.
(function () {
  'use strict';
  var LC = window.LightweightCharts;
  if (!LC) return;
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.content : '';
  var palette = ['#2962ff', '#ff9800', '#9c27b0', '#26a69a', '#ef5350', '#795548'];
  var charts = [];

  function cssVar(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  function themeOptions() {
    var line = cssVar('--line', '#d1d9e0');
    return {
      layout: { background: { type: 'solid', color: cssVar('--panel', '#ffffff') }, textColor: cssVar('--fg', '#1f2328') },
      grid: { vertLines: { color: line }, horzLines: { color: line } },
      rightPriceScale: { borderColor: line },
      timeScale: { borderColor: line, timeVisible: true, secondsVisible: false }
    };
  }

  function setup(el) {
    if (el.dataset.chartInit) return;
    el.dataset.chartInit = 'true';
    var chart = LC.createChart(el, Object.assign({ autoSize: true }, themeOptions()));
    var c = { el: el, chart: chart, kind: el.dataset.chart, series: [], lines: [], markers: null, busy: false };
    charts.push(c);
    load(c);
  }

  function load(c) {
    if (c.busy) return;
    c.busy = true;
    fetch(c.el.dataset.chartSrc, { headers: { 'X-CSRF-Token': token, 'Accept': 'application/json' }, credentials: 'same-origin' })
      .then(function (r) {
        return r.json().then(function (body) { if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status)); return body; });
      })
      .then(function (data) {
        if (c.kind === 'candles') drawCandles(c, data); else drawEquity(c, data);
        c.el.dataset.drawn = 'true';
        delete c.el.dataset.error;
      })
      .catch(function (err) { c.el.dataset.error = String(err.message || err); say(c, 'Chart unavailable: ' + (err.message || err)); })
      .then(function () { c.busy = false; });
  }

  // say shows a line of text over the chart (an empty series, a refusal).
  function say(c, text) {
    var p = c.el.querySelector('.chart-message');
    if (!text) { if (p) p.remove(); return; }
    if (!p) { p = document.createElement('p'); p.className = 'chart-message muted'; c.el.appendChild(p); }
    p.textContent = text;
  }

  function drawCandles(c, data) {
    if (!c.series.length) {
      c.series.push(c.chart.addSeries(LC.CandlestickSeries, {
        upColor: '#26a69a', downColor: '#ef5350', borderVisible: false, wickUpColor: '#26a69a', wickDownColor: '#ef5350'
      }));
      c.markers = LC.createSeriesMarkers(c.series[0], []);
    }
    var s = c.series[0];
    var candles = data.candles || [];
    s.setData(candles);
    var markers = data.markers || [];
    c.markers.setMarkers(markers);
    c.lines.forEach(function (l) { s.removePriceLine(l); });
    c.lines = (data.lines || []).map(function (l) {
      return s.createPriceLine({ price: l.price, color: l.color, lineWidth: 1, lineStyle: LC.LineStyle.Dashed, axisLabelVisible: true, title: l.title });
    });
    c.el.dataset.points = String(candles.length);
    c.el.dataset.markers = String(markers.length);
    c.el.dataset.lines = String(c.lines.length);
    say(c, data.message || (candles.length ? '' : 'No candles for this pair.'));
    c.chart.timeScale().fitContent();
  }

  function drawEquity(c, data) {
    c.series.forEach(function (s) { c.chart.removeSeries(s); });
    c.series = [];
    var legend = c.el.querySelector('.chart-legend');
    if (!legend) { legend = document.createElement('div'); legend.className = 'chart-legend'; c.el.appendChild(legend); }
    legend.textContent = '';
    var n = 0;
    (data.series || []).forEach(function (ser, i) {
      var color = palette[i % palette.length];
      var s = c.chart.addSeries(LC.LineSeries, { color: color, lineWidth: 2, title: ser.name });
      s.setData(ser.points || []);
      c.series.push(s);
      n += (ser.points || []).length;
      var item = document.createElement('span');
      var swatch = document.createElement('span');
      swatch.className = 'chart-swatch';
      swatch.style.backgroundColor = color; // CSSOM, which the CSP allows
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(ser.name));
      legend.appendChild(item);
    });
    c.el.dataset.points = String(n);
    c.el.dataset.markers = '0';
    say(c, n ? '' : 'No equity recorded in this period.');
    c.chart.timeScale().fitContent();
  }

  function retheme() {
    var o = themeOptions();
    charts.forEach(function (c) { c.chart.applyOptions(o); });
  }

  // scan draws the charts under root (the page, or content htmx swapped in) not drawn yet,
  // and forgets charts whose element has left the page.
  function scan(root) {
    charts = charts.filter(function (c) {
      if (document.body.contains(c.el)) return true;
      c.chart.remove();
      return false;
    });
    if (root.matches && root.matches('.chart[data-chart][data-chart-src]')) setup(root);
    if (root.querySelectorAll) root.querySelectorAll('.chart[data-chart][data-chart-src]').forEach(setup);
  }

  function start() {
    scan(document);
    document.addEventListener('htmx:load', function (e) { if (e.detail && e.detail.elt) scan(e.detail.elt); });
    document.addEventListener('sigops:theme', function () { setTimeout(retheme, 0); });
    if (window.matchMedia) {
      var mq = matchMedia('(prefers-color-scheme: dark)');
      if (mq.addEventListener) mq.addEventListener('change', retheme);
    }
    document.addEventListener('sigops:live', function (e) {
      var bot = e.detail && e.detail.bot;
      charts.forEach(function (c) {
        if (!document.body.contains(c.el)) return;
        if (!bot || !c.el.dataset.liveBot || c.el.dataset.liveBot === bot) load(c);
      });
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
