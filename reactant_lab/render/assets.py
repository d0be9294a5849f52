"""The report's inline CSS and its small, optional script (no network, no external assets)."""

from __future__ import annotations

CSS = """
:root{--fg:#1f2328;--mute:#656d76;--line:#d0d7de;--add:#e6ffec;--del:#ffebe9;--addx:#abf2bc;
--delx:#ffb3ad;--bg2:#f6f8fa}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
margin:0;padding:0 1.5em 3em}
header{border-bottom:1px solid var(--line);margin-bottom:.5em}
h1{font-size:1.6em;margin:.6em 0 .1em}h2{font-size:1.25em;margin:1.4em 0 .4em}
h3{font-size:1.05em;margin:1em 0 .3em}.meta,.note{color:var(--mute)}
nav.toc{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid var(--line);
z-index:2}nav.toc a{margin-right:.8em}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.mlir,pre.hlo{background:var(--bg2);padding:.6em;overflow:auto;max-height:40em;
border:1px solid var(--line)}
table{border-collapse:collapse;margin:.3em 0}td,th{border:1px solid var(--line);padding:.15em .5em;
text-align:left;vertical-align:top}table.ops td{text-align:right}
td.up{background:var(--add)}td.down{background:var(--del)}
tr.unchanged td{color:var(--mute)}.chg{color:#9a6700;font-weight:600}.same{color:var(--mute)}
.mark{font-size:.8em;padding:0 .4em;border-radius:.6em;background:var(--bg2);border:1px solid var(--line)}
.mark.mutated{background:#fed7aa}.mark.donated{border-style:dashed}.mark.preserved{background:#f3f4f6}
section.stage{border-top:2px solid var(--line);margin-top:1.5em}
img.graph{max-width:100%;height:auto;border:1px solid var(--line);background:#fff}
.diff{border:1px solid var(--line);margin:.3em 0;overflow:auto;max-height:48em}
.diff .dh{background:var(--bg2);padding:.2em .5em;border-bottom:1px solid var(--line)}
.diff .empty{padding:.4em .6em;color:var(--mute)}
.diff .r{display:grid;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.diff.sbs .r{grid-template-columns:3.5em minmax(0,1fr) 3.5em minmax(0,1fr)}
.diff.uni .r{grid-template-columns:3.5em 3.5em 1.2em minmax(0,1fr)}
.diff .ln{color:var(--mute);text-align:right;padding-right:.4em;user-select:none}
.diff .cd{white-space:pre-wrap;overflow-wrap:anywhere}
.diff .cd.add{background:var(--add)}.diff .cd.del{background:var(--del)}
.diff .cd.add .x{background:var(--addx)}.diff .cd.del .x{background:var(--delx)}
.diff .fold,.diff details.fold>summary{background:#eef3fb;color:var(--mute);padding:0 .5em;
font-size:12px;cursor:pointer}
.o{color:#8250df;font-weight:600}.d{color:#953800}.v{color:#0550ae}.b{color:#116329}
.s{color:#cf222e}.t{color:#0a3069}.a{color:#6639ba}.k{color:#57606a}.w{color:#cf222e}
.q{color:#0a3069;background:#eef6ff}.n{color:#0550ae}.c{color:#6e7781;font-style:italic}
.l{color:#8c959f}.el{color:var(--mute);background:var(--bg2);font-style:italic}
.toggles{font-size:.9em;color:var(--mute);margin:.4em 0}
#lay-uni:checked~main .diff.sbs:not(.only),#lay-sbs:checked~main .diff.uni{display:none}
#hide-same:checked~main section.stage.unchanged,#hide-same:checked~main tr.unchanged{display:none}
.toggle{position:absolute;left:-9999px}
#rl-jump{position:fixed;right:1em;bottom:1em;z-index:3}
ul.stage-key{columns:3;color:var(--mute);font-size:.9em}
"""

JS = """
(function(){
  const data = JSON.parse(document.getElementById('rl-data').textContent);
  const cache = {};
  async function gunzip(b64){
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return await new Response(stream).text();
  }
  async function text(id){
    if (id in cache) return cache[id];
    const e = data.texts[id];
    let out;
    if (e.encoding === 'plain') out = e.data;
    else if (e.encoding === 'gzip') out = await gunzip(e.data);
    else {
      const base = (await text(e.base)).split('\\n');
      const ops = JSON.parse(await gunzip(e.data));
      const lines = [];
      for (const op of ops) {
        if (Array.isArray(op)) lines.push(...base.slice(op[0], op[1]));
        else lines.push(...op.split('\\n'));
      }
      out = lines.join('\\n');
    }
    cache[id] = out;
    return out;
  }
  for (const el of document.querySelectorAll('[data-lazy-text]')) {
    const btn = document.createElement('button');
    btn.textContent = 'show this text';
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      const pre = document.createElement('pre');
      pre.className = el.dataset.kind || 'mlir';
      pre.textContent = await text(el.dataset.lazyText);
      el.replaceChildren(pre);
    });
    el.appendChild(btn);
  }
  function line(cls, num, text, spans) {
    const ln = document.createElement('span');
    ln.className = 'ln';
    ln.textContent = num === null ? '' : String(num);
    const cd = document.createElement('span');
    cd.className = 'cd ' + cls;
    let pos = 0;
    for (let k = 0; k + 1 < spans.length; k += 2) {
      cd.append(text.slice(pos, spans[k]));
      const x = document.createElement('span');
      x.className = 'x';
      x.textContent = text.slice(spans[k], spans[k + 1]);
      cd.append(x);
      pos = spans[k + 1];
    }
    cd.append(text.slice(pos));
    return [ln, cd];
  }
  async function renderDiff(el, d) {
    const a = (await text(d.a)).split('\\n'), b = (await text(d.b)).split('\\n');
    const rows = JSON.parse(await gunzip(d.rows));
    const box = document.createElement('div');
    box.className = 'diff sbs only';
    const row = cells => { const r = document.createElement('div'); r.className = 'r';
      r.append(...cells); box.append(r); };
    for (const r of rows) {
      if (r[0] === '=') {
        for (const [i, j] of r[2]) row([...line('', i, a[i - 1], []), ...line('', j, b[j - 1], [])]);
        if (r[1]) { const f = document.createElement('div'); f.className = 'fold';
          f.textContent = r[1] + ' unchanged lines'; box.append(f); }
        for (const [i, j] of r[3]) row([...line('', i, a[i - 1], []), ...line('', j, b[j - 1], [])]);
      } else if (r[0] === '-') row([...line('del', r[1], a[r[1] - 1], r[2]), ...line('', null, '', [])]);
      else if (r[0] === '+') row([...line('', null, '', []), ...line('add', r[1], b[r[1] - 1], r[2])]);
      else row([...line('del', r[1], a[r[1] - 1], r[3]), ...line('add', r[2], b[r[2] - 1], r[4])]);
    }
    const prev = el.previousElementSibling;
    if (prev && prev.classList.contains('diff')) prev.remove();
    el.replaceChildren(box);
  }
  for (const el of document.querySelectorAll('[data-lazy-diff]')) {
    const btn = document.createElement('button');
    btn.textContent = 'show the whole diff';
    btn.addEventListener('click', () => { btn.disabled = true;
      renderDiff(el, data.diffs[el.dataset.lazyDiff]); });
    el.appendChild(btn);
  }
  const sel = document.createElement('select');
  sel.id = 'rl-jump';
  for (const s of data.stages) {
    const o = document.createElement('option');
    o.value = 'stage-' + s.index;
    o.textContent = s.index + ': ' + s.name + (s.changed ? '' : ' (unchanged)');
    sel.appendChild(o);
  }
  sel.addEventListener('change', () => { location.hash = sel.value; });
  document.body.appendChild(sel);
  document.addEventListener('keydown', ev => {
    if (ev.target.closest('input,select,textarea') || !'jk'.includes(ev.key)) return;
    const i = Math.max(0, Math.min(data.stages.length - 1,
      sel.selectedIndex + (ev.key === 'j' ? 1 : -1)));
    sel.selectedIndex = i; location.hash = sel.value;
  });
})();
"""
