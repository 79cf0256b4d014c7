// meshplane's page: asks for the API token once (kept in this tab's
// sessionStorage), fetches the server-rendered fragments under /ui/ with it,
// and follows /ui/events to refresh what is shown when events arrive.
// No framework, no build step: the server renders, this only swaps.
'use strict';
(() => {
  const KEY = 'meshplane-token';
  const $ = (id) => document.getElementById(id);

  let token = sessionStorage.getItem(KEY);
  let node = null; // the node whose lanes are shown
  let cursor = ''; // '' for the latest page, else 'before=P' or 'after=P[&forward=1]'
  let stream = null; // AbortController of the event stream
  let position = 0; // the last position the stream announced
  // at is the moment shown ('' for now: live), a position or an RFC 3339
  // time; every fragment is asked with ?at= then, and the link (#at=)
  // holds it.
  let at = new URLSearchParams(location.hash.slice(1)).get('at') || '';
  // filter is the overview's: state, module, name and page, kept in the
  // link too; the server filters and pages (/ui/status).
  const FILTERS = ['state', 'module', 'name', 'page'];
  const filter = {};
  {
    const h = new URLSearchParams(location.hash.slice(1));
    for (const k of FILTERS) filter[k] = h.get(k) || '';
  }

  class Unauthorized extends Error {}

  async function get(path) {
    if (at && path.startsWith('/ui/') && path !== '/ui/events') {
      path += (path.includes('?') ? '&' : '?') + 'at=' + encodeURIComponent(at);
    }
    const res = await fetch(path, {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
    if (res.status === 401) throw new Unauthorized('token refused');
    return res.text(); // an error is a fragment too, shown where it was asked for
  }

  function handle(e) {
    if (e instanceof Unauthorized) showLogin('The controller refused that token.');
    else if (e.name !== 'AbortError') console.error(e);
  }

  // setLive says whether the page follows the controller; while a past
  // moment is shown it says that instead (the stream still runs, so "now"
  // finds it live), never "live" or a position of now.
  let liveOn = false;
  let liveText = 'not connected';
  function setLive(on, text) {
    liveOn = on;
    liveText = text;
    const l = $('live');
    if (at && token) {
      l.textContent = 'as of ' + at + ' · not live';
      l.className = 'live past';
      return;
    }
    l.textContent = text;
    l.className = 'live ' + (on ? 'on' : 'off');
  }

  function showLogin(msg) {
    token = null;
    sessionStorage.removeItem(KEY);
    if (stream) { stream.abort(); stream = null; }
    $('main').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    const e = $('login-error');
    e.textContent = msg || '';
    e.hidden = !msg;
    setLive(false, 'not connected');
    $('token').focus();
  }

  // setHash makes the link hold what is shown: the node and the moment.
  function setHash() {
    const h = new URLSearchParams();
    if (node) h.set('node', node);
    if (at) h.set('at', at);
    for (const k of FILTERS) if (filter[k]) h.set(k, filter[k]);
    history.replaceState(null, '', '#' + h.toString());
  }

  // moveTo shows the mesh as it stood at a ('' for now, live again).
  async function moveTo(a) {
    at = a;
    $('at').value = a;
    setHash();
    setLive(liveOn, liveText);
    await refreshStatus();
    if (node) { cursor = ''; await loadNode(); }
  }

  async function start() {
    $('at').value = at;
    showFilter();
    $('login').hidden = true;
    $('main').hidden = false;
    $('logout').hidden = false;
    setLive(liveOn, liveText);
    try {
      await refreshStatus();
      const h = new URLSearchParams(location.hash.slice(1));
      if (h.get('node')) await openNode(h.get('node'), '');
      follow();
    } catch (e) { handle(e); }
  }

  async function refreshStatus() {
    const q = new URLSearchParams();
    for (const k of FILTERS) if (filter[k]) q.set(k, filter[k]);
    const s = q.toString();
    $('status').innerHTML = await get('/ui/status' + (s ? '?' + s : ''));
    markChosen();
  }

  // showFilter puts the filter in the form.
  function showFilter() {
    const sel = $('filter-state');
    if (filter.state && ![...sel.options].some((o) => o.value === filter.state)) {
      sel.add(new Option(filter.state, filter.state)); // a state this page's list does not name
    }
    sel.value = filter.state;
    $('filter-module').value = filter.module;
    $('filter-name').value = filter.name;
  }

  // setFilter narrows the overview (page 1 unless a page is given).
  async function setFilter(f) {
    for (const k of FILTERS) if (k in f) filter[k] = f[k];
    if (!('page' in f)) filter.page = '';
    showFilter();
    setHash();
    await refreshStatus();
  }

  function markChosen() {
    for (const tr of document.querySelectorAll('[data-status-node]')) {
      tr.classList.toggle('chosen', tr.dataset.statusNode === node);
    }
  }

  async function openNode(name, cur) {
    const other = name !== node;
    if (other) closePanel();
    node = name;
    cursor = cur;
    setHash();
    markChosen();
    await loadNode(!other);
  }

  // loadNode renders the node's page at the cursor, keeping the diff shown
  // when asked (the same node).
  async function loadNode(keepDiff = true) {
    const shown = node;
    const keep = keepDiff && $('diff') && $('diff').innerHTML;
    const q = '/ui/node?node=' + encodeURIComponent(node) + (cursor ? '&' + cursor : '');
    const html = await get(q);
    if (shown !== node) return; // another node was chosen meanwhile
    // The lanes keep their newest columns in view: a page opens scrolled
    // to its right end, and a refresh stays there unless the reader
    // scrolled back to look at older columns.
    const was = document.querySelector('#node .lanes-wrap');
    const atEnd = !keepDiff || !was || was.scrollLeft + was.clientWidth >= was.scrollWidth - 4;
    const left = was ? was.scrollLeft : 0;
    $('node').innerHTML = html;
    if (keep && $('diff')) $('diff').innerHTML = keep;
    const wrap = document.querySelector('#node .lanes-wrap');
    if (wrap) wrap.scrollLeft = atEnd ? wrap.scrollWidth : left;
  }

  // refresh is what an announced position does: the status again, and the
  // node's latest page when that is what is shown. Refreshes never overlap;
  // positions announced meanwhile make one more.
  let busy = false;
  let again = false;
  async function refresh(p) {
    if (at) return; // a past moment does not change
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        const target = position;
        await refreshStatus();
        if (node && cursor === '') await loadNode();
        else if (node) { const n = $('newer-note'); if (n) n.hidden = false; }
        $('live').dataset.rendered = String(target);
      } while (again);
    } catch (e) {
      handle(e);
    } finally {
      busy = false;
    }
  }

  // follow reads /ui/events with fetch (EventSource cannot send the token),
  // reconnecting with a growing delay when the stream ends.
  async function follow() {
    if (stream) stream.abort();
    const ac = new AbortController();
    stream = ac;
    let delay = 1000;
    while (!ac.signal.aborted) {
      try {
        const res = await fetch('/ui/events', {
          headers: {Authorization: 'Bearer ' + token, Accept: 'text/event-stream'},
          cache: 'no-store', signal: ac.signal,
        });
        if (res.status === 401) throw new Unauthorized('token refused');
        if (!res.ok || !res.body) throw new Error('events: HTTP ' + res.status);
        setLive(true, 'live');
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n?/g, '\n');
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            onBlock(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
      } catch (e) {
        if (e instanceof Unauthorized) { handle(e); return; }
        if (ac.signal.aborted) return;
      }
      setLive(false, 'reconnecting…');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  function onBlock(block) {
    let type = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const j = line.indexOf(':');
      const field = j < 0 ? line : line.slice(0, j);
      let v = j < 0 ? '' : line.slice(j + 1);
      if (v.startsWith(' ')) v = v.slice(1);
      if (field === 'event') type = v;
      else if (field === 'data') data += (data ? '\n' : '') + v;
    }
    if (type !== 'position' || !data) return;
    const p = JSON.parse(data).position;
    if (p === position) return;
    position = p;
    const l = $('live');
    l.dataset.position = String(p);
    setLive(true, 'live · position ' + p);
    refresh(p);
  }

  function showPanel(id) {
    const src = document.getElementById(id);
    if (!src) return;
    $('panel-body').innerHTML = src.innerHTML;
    $('panel').dataset.shows = id;
    $('panel').hidden = false;
  }

  function closePanel() {
    $('panel').hidden = true;
    $('panel-body').innerHTML = '';
    delete $('panel').dataset.shows;
  }

  async function loadWhy(resource) {
    $('panel-body').innerHTML = await get('/ui/why?node=' + encodeURIComponent(node) + '&resource=' + encodeURIComponent(resource));
    $('panel').dataset.shows = 'why';
    $('panel').hidden = false;
  }

  async function loadDiff(from, to) {
    const d = $('diff');
    if (!d) return;
    d.innerHTML = await get('/ui/diff?node=' + encodeURIComponent(node) + '&from=' + encodeURIComponent(from) + '&to=' + encodeURIComponent(to));
    d.scrollIntoView({block: 'nearest'});
  }

  document.addEventListener('click', (ev) => {
    const b = ev.target.closest('button');
    if (!b) return;
    const d = b.dataset;
    let work = null;
    if ('live' in d) work = moveTo('');
    else if (d.statusState !== undefined) work = setFilter({state: d.statusState});
    else if (d.statusPage !== undefined) work = setFilter({page: d.statusPage});
    else if (d.node !== undefined) work = openNode(d.node, '');
    else if (d.before !== undefined) { cursor = 'before=' + d.before; work = loadNode(); }
    else if (d.after !== undefined) { cursor = 'after=' + d.after + ('forward' in d ? '&forward=1' : ''); work = loadNode(); }
    else if ('latest' in d) { cursor = ''; work = loadNode(); }
    else if (d.episode) showPanel(d.episode);
    else if (d.detail) showPanel(d.detail);
    else if (d.why) work = loadWhy(d.why);
    else if (d.diffFrom) work = loadDiff(d.diffFrom, d.diffTo);
    if (work) work.catch(handle);
  });

  document.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (ev.target.id === 'login') {
      const t = $('token').value.trim();
      if (!t) return;
      token = t;
      sessionStorage.setItem(KEY, t);
      $('token').value = '';
      start();
    } else if (ev.target.id === 'moment') {
      moveTo($('at').value.trim()).catch(handle);
    } else if (ev.target.id === 'status-filter') {
      setFilter({state: $('filter-state').value, module: $('filter-module').value.trim(), name: $('filter-name').value.trim()}).catch(handle);
    } else if (ev.target.id === 'diff-form') {
      loadDiff($('diff-from').value, $('diff-to').value).catch(handle);
    }
  });

  document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') closePanel(); });
  $('panel-close').addEventListener('click', (ev) => { ev.stopPropagation(); closePanel(); });
  $('logout').addEventListener('click', () => showLogin(''));
  $('at-now').addEventListener('click', () => moveTo('').catch(handle));
  $('filter-clear').addEventListener('click', () => setFilter({state: '', module: '', name: ''}).catch(handle));

  if (token) start(); else showLogin('');
})();
