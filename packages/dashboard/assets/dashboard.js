// Live updates: the element marked data-live is replaced with each `update` the server
// sends (markup it rendered and escaped). Which <details> the reader had open is kept.
/* global document, EventSource */
'use strict';
(function () {
  const live = document.getElementById('live');
  const url = live && live.dataset.live;
  if (!url || typeof EventSource === 'undefined') return;
  const source = new EventSource(url);
  source.addEventListener('update', function (event) {
    const open = Array.from(live.querySelectorAll('details')).map(function (d) { return d.open; });
    live.innerHTML = event.data;
    live.querySelectorAll('details').forEach(function (d, i) {
      if (i < open.length) d.open = open[i];
    });
    document.body.dataset.updated = String(Date.now());
  });
  source.addEventListener('gone', function () { source.close(); });
})();
