// The Millrace console: follows /api/events (server-sent events: each query whole when the stream
// opens, then its new progress and live task gauges), and draws the selected query's plan, charts and tables. Plain browser JavaScript with uPlot
// (loaded before this module as the global `uPlot`): nothing to build.

/** How much history the charts keep (seconds). */
const WINDOW_S = 300;
const SVG = 'http://www.w3.org/2000/svg';
const WORKER_HUES = [210, 140, 30, 280, 0, 180, 60, 320, 100, 250, 20, 160];

/** Per query id: its latest view, progress history and chart data. */
const queries = new Map();
let selected = null;
/** The task gauges of the previous tick, per query, to turn counters into rates. */
const previousTasks = new Map();
const charts = {};

const $ = (id) => document.getElementById(id);
const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '—'
    : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits });

function el(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function workerColor(worker, lightness = 45) {
  return `hsl(${WORKER_HUES[worker % WORKER_HUES.length]}, 60%, ${lightness}%)`;
}

// --- data ----------------------------------------------------------------------------------------

function pointOf(p) {
  const t = Date.parse(p.timestamp) / 1000;
  const e2e = p.latencyMs?.e2e;
  const emitted = p.sink?.numOutputRows > 0;
  const watermark = p.eventTime?.watermark ? Date.parse(p.eventTime.watermark) : null;
  const stateRows = p.stateOperators.reduce((n, s) => n + s.numRowsTotal, 0);
  const stateBytes = p.stateOperators.reduce((n, s) => n + s.memoryUsedBytes, 0);
  return {
    t,
    input: p.inputRowsPerSecond,
    processed: p.processedRowsPerSecond,
    p50: emitted ? e2e.p50 : null,
    p99: emitted ? e2e.p99 : null,
    p999: emitted ? e2e.p999 : null,
    lag: watermark === null ? null : Math.max(0, Date.parse(p.timestamp) - watermark) / 1000,
    stateRows: p.stateOperators.length > 0 ? stateRows : null,
    stateMiB: p.stateOperators.length > 0 ? stateBytes / 2 ** 20 : null,
  };
}

function upsert(view, recentProgress) {
  let q = queries.get(view.id);
  if (q === undefined) {
    q = { view, progress: [], points: [] };
    queries.set(view.id, q);
  }
  q.view = { ...q.view, ...view, topology: view.topology ?? q.view.topology };
  if (recentProgress) {
    q.progress = [];
    q.points = [];
    addProgress(q, recentProgress);
  }
  return q;
}

function addProgress(q, list) {
  for (const p of list) {
    q.progress.push(p);
    q.points.push(pointOf(p));
  }
  const from = (q.points.at(-1)?.t ?? 0) - WINDOW_S;
  while (q.points.length > 0 && q.points[0].t < from) q.points.shift();
  while (q.progress.length > 100) q.progress.shift();
}

// --- the plan ------------------------------------------------------------------------------------

/** Columns of stages by depth: a stage sits one column after the furthest stage feeding it. */
function columnsOf(stages) {
  const depth = new Map();
  const visit = (s) => {
    if (depth.has(s.id)) return depth.get(s.id);
    depth.set(s.id, 0);
    let d = 0;
    for (const i of s.inputs) if (i.kind === 'shuffle') d = Math.max(d, visit(stages[i.fromStage]) + 1);
    depth.set(s.id, d);
    return d;
  };
  for (const s of stages) visit(s);
  const columns = [];
  for (const s of stages) (columns[depth.get(s.id)] ??= []).push(s);
  return columns;
}

const CELL = 14;
const PER_ROW = 16;
const STAGE_W = 250;
const GAP_X = 100;

function drawPlan(view) {
  const svg = $('plan');
  svg.replaceChildren();
  const topo = view.topology;
  if (!topo) return;
  const defs = el('defs');
  const marker = el('marker', {
    id: 'arrow',
    viewBox: '0 0 10 10',
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: 'auto-start-reverse',
  });
  marker.append(el('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#64748b' }));
  defs.append(marker);
  svg.append(defs);
  const columns = columnsOf(topo.stages);
  const boxes = new Map();
  const leftPad = 160;
  let height = 0;
  columns.forEach((column, c) => {
    let y = 16;
    for (const s of column) {
      const rows = Math.ceil(s.partitions / PER_ROW);
      const h = 44 + s.operators.length * 15 + rows * (CELL + 3) + 10;
      const x = leftPad + c * (STAGE_W + GAP_X);
      boxes.set(s.id, { x, y, h });
      y += h + 24;
    }
    height = Math.max(height, y);
  });
  const sinkStage = topo.stages.find((s) => s.output.kind === 'sink');
  const width = leftPad + columns.length * (STAGE_W + GAP_X) + 90;
  // Drawn at its size, and scaled down to the page's width when wider (CSS: max-width 100%).
  svg.setAttribute('viewBox', `0 0 ${width} ${Math.max(height, 80)}`);
  svg.setAttribute('width', width);
  svg.setAttribute('height', Math.max(height, 80));
  // Edges first, under the boxes.
  for (const s of topo.stages) {
    const to = boxes.get(s.id);
    s.inputs.forEach((input, n) => {
      const ty = to.y + 24 + n * 14;
      if (input.kind === 'source') {
        const box = el('g', { class: 'source', 'data-source': input.description });
        box.append(el('rect', { class: 'endpoint', x: 8, y: ty - 14, width: 120, height: 28, rx: 4 }));
        box.append(el('text', { x: 14, y: ty + 4 }, clip(input.description, 17)));
        box.append(el('title', {}, `source ${input.description}`));
        svg.append(box);
        svg.append(el('path', { class: 'edge', d: `M 128 ${ty} L ${to.x} ${ty}` }));
        svg.append(el('text', { class: 'small', x: 134, y: ty - 4 }, `${input.rings} feed`));
      } else {
        const from = boxes.get(input.fromStage);
        const fx = from.x + STAGE_W;
        const fy = from.y + 24;
        const out = topo.stages[input.fromStage].output;
        // The label fits the gap between the boxes (about 6 px a character); the whole key is its title.
        const full = out.partitioning === 'forward' ? 'forward' : `hash by ${out.key}`;
        const label = clip(full, Math.floor((GAP_X - 10) / 6));
        const edge = el('path', {
          class: 'edge',
          d: `M ${fx} ${fy} C ${fx + GAP_X / 2} ${fy}, ${to.x - GAP_X / 2} ${ty}, ${to.x} ${ty}`,
        });
        edge.append(el('title', {}, full));
        svg.append(edge);
        const lx = fx + 6;
        const text = el('text', { class: 'small', x: lx, y: fy - 6 }, label);
        text.append(el('title', {}, full));
        svg.append(text);
        svg.append(el('text', { class: 'small ring-count', x: lx, y: fy + 14 }, `${input.rings} rings`));
      }
    });
  }
  for (const s of topo.stages) {
    const { x, y, h } = boxes.get(s.id);
    const g = el('g', { 'data-stage': s.id });
    g.append(el('rect', { class: 'stage', x, y, width: STAGE_W, height: h, rx: 6 }));
    g.append(
      el(
        'text',
        { x: x + 8, y: y + 16, 'font-weight': 600 },
        `Stage ${s.id} · ${s.partitions} partition${s.partitions === 1 ? '' : 's'}`,
      ),
    );
    g.append(el('text', { class: 'small stage-rate', x: x + 8, y: y + 32, 'data-rate': s.id }, ''));
    s.operators.forEach((op, i) => {
      g.append(el('text', { class: 'small', x: x + 8, y: y + 48 + i * 15 }, clip(op, 38)));
    });
    const top = y + 44 + s.operators.length * 15;
    for (const t of topo.tasks.filter((t) => t.stage === s.id)) {
      const cx = x + 8 + (t.partition % PER_ROW) * (CELL + 3);
      const cy = top + Math.floor(t.partition / PER_ROW) * (CELL + 3);
      const cell = el('g', { class: 'task', 'data-task': t.task, 'data-worker': t.worker });
      cell.append(
        el('rect', {
          x: cx,
          y: cy,
          width: CELL,
          height: CELL,
          rx: 2,
          fill: workerColor(t.worker, 88),
          stroke: workerColor(t.worker),
        }),
      );
      // The fill bar: how full the task's fullest input ring is.
      cell.append(
        el('rect', { class: 'fill', x: cx, y: cy + CELL, width: CELL, height: 0, fill: '#dc2626' }),
      );
      cell.append(el('title', {}, `task ${t.task}`));
      g.append(cell);
    }
    svg.append(g);
    if (s === sinkStage) {
      const sx = x + STAGE_W + 24;
      svg.append(el('path', { class: 'edge', d: `M ${x + STAGE_W} ${y + 24} L ${sx} ${y + 24}` }));
      const sink = el('g', { class: 'sink' });
      sink.append(el('rect', { class: 'endpoint', x: sx, y: y + 10, width: 62, height: 28, rx: 4 }));
      sink.append(el('text', { x: sx + 6, y: y + 28 }, 'sink'));
      sink.append(el('title', {}, `sink ${s.output.description} (${s.output.outputMode})`));
      svg.append(sink);
    }
  }
  const tasks = topo.tasks.length;
  $('plan-caption').textContent =
    `${topo.stages.length} stage${topo.stages.length === 1 ? '' : 's'}, ${tasks} task${tasks === 1 ? '' : 's'} on ` +
    `${topo.workers} worker${topo.workers === 1 ? '' : 's'}` +
    (topo.udfWorkers > 0 ? ` (+${topo.udfWorkers} UDF)` : '');
  $('workers').replaceChildren(
    ...Array.from({ length: topo.workers }, (_, w) => {
      const span = document.createElement('span');
      const swatch = document.createElement('i');
      swatch.style.background = workerColor(w, 88);
      swatch.style.border = `1px solid ${workerColor(w)}`;
      span.append(swatch, `worker ${w}`);
      return span;
    }),
    Object.assign(document.createElement('span'), { textContent: 'red bar: input ring fill' }),
  );
}

function clip(s, n) {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** Live numbers on the plan: per task its rate, fill and backpressure; per stage its rate. */
function updatePlan(q) {
  const before = previousTasks.get(q.view.id);
  const now = performance.now();
  const byStage = new Map();
  for (const t of q.view.tasks) {
    const prev = before?.tasks.get(t.task);
    const dt = before ? (now - before.at) / 1000 : 0;
    const rate = prev && dt > 0 ? Math.max(0, t.rowsIn - prev.rowsIn) / dt : null;
    const bp = prev && dt > 0 ? Math.max(0, t.backpressureMs - prev.backpressureMs) / dt : null;
    const s = byStage.get(t.stage) ?? { rate: 0, bp: 0, known: false };
    if (rate !== null) {
      s.rate += rate;
      s.bp += bp;
      s.known = true;
    }
    byStage.set(t.stage, s);
    const cell = document.querySelector(`#plan [data-task="${t.task}"]`);
    if (!cell) continue;
    const bar = cell.querySelector('.fill');
    const box = cell.querySelector('rect');
    const h = Math.round(Math.min(1, t.inputFill) * CELL);
    bar.setAttribute('y', Number(box.getAttribute('y')) + CELL - h);
    bar.setAttribute('height', h);
    cell.querySelector('title').textContent =
      `task ${t.task}: stage ${t.stage} partition ${t.partition} on worker ${t.worker}\n` +
      `${rate === null ? '—' : fmt(rate)} rows/s in, ${fmt(t.rowsIn)} rows in, ${fmt(t.rowsOut)} out\n` +
      `input ring ${fmt(t.inputFill * 100, 1)}% full, backpressure ${bp === null ? '—' : fmt(bp, 1)} ms/s`;
  }
  for (const [stage, s] of byStage) {
    const label = document.querySelector(`#plan [data-rate="${stage}"]`);
    if (label && s.known) label.textContent = `${fmt(s.rate)} rows/s · backpressure ${fmt(s.bp, 1)} ms/s`;
  }
  previousTasks.set(q.view.id, { at: now, tasks: new Map(q.view.tasks.map((t) => [t.task, t])) });
}

// --- charts --------------------------------------------------------------------------------------

function makeCharts() {
  const width = () => Math.max(320, ($('chart-throughput').parentElement.clientWidth || 480) - 12);
  const base = (series, scales = {}) => ({
    width: width(),
    height: 190,
    series: [{}, ...series],
    scales: { x: { time: true }, ...scales },
    legend: { live: false },
    axes: [{}, { size: 64 }],
  });
  const line = (label, stroke, scale = 'y') => ({ label, stroke, width: 1.5, scale, spanGaps: false });
  charts.throughput = new uPlot(
    base([line('input', '#2563eb'), line('processed', '#16a34a')]),
    [[], [], []],
    $('chart-throughput'),
  );
  charts.latency = new uPlot(
    base([line('p50', '#16a34a'), line('p99', '#d97706'), line('p99.9', '#dc2626')]),
    [[], [], [], []],
    $('chart-latency'),
  );
  charts.watermark = new uPlot(base([line('lag', '#7c3aed')]), [[], []], $('chart-watermark'));
  const state = base([line('rows', '#0891b2'), line('MiB', '#be185d', 'mib')], { mib: {} });
  state.axes = [
    {},
    { scale: 'y', size: 64 },
    {
      scale: 'mib',
      side: 1,
      size: 56,
      grid: { show: false },
      // Small sizes keep two significant digits (whole numbers would show every tick as 0).
      values: (_u, splits) => splits.map((v) => (v === 0 ? '0' : v >= 10 ? v.toFixed(0) : v.toPrecision(2))),
    },
  ];
  charts.state = new uPlot(state, [[], [], []], $('chart-state'));
  window.addEventListener('resize', () => {
    for (const c of Object.values(charts)) c.setSize({ width: width(), height: 190 });
  });
}

function updateCharts(q) {
  const pts = q.points;
  const col = (k) => pts.map((p) => p[k]);
  const x = col('t');
  charts.throughput.setData([x, col('input'), col('processed')]);
  charts.latency.setData([x, col('p50'), col('p99'), col('p999')]);
  charts.watermark.setData([x, col('lag')]);
  charts.state.setData([x, col('stateRows'), col('stateMiB')]);
  document.body.dataset.points = String(pts.length);
}

// --- summary and tables --------------------------------------------------------------------------

function updateSummary(q) {
  const v = q.view;
  $('query-name').textContent = v.name ?? v.id;
  const status = $('status');
  status.textContent = v.state;
  status.className = `badge ${v.state}`;
  $('run-id').textContent = v.runId ?? '—';
  const last = q.progress.at(-1);
  $('epoch').textContent = last ? String(last.batchId) : '—';
  $('watermark').textContent = last?.eventTime?.watermark ?? '—';
  const error = $('error');
  error.hidden = v.exception === null;
  error.textContent = v.exception ? `${v.exception.code}: ${v.exception.message}` : '';
  const rows = q.progress
    .slice(-10)
    .reverse()
    .map((p) => {
      const tr = document.createElement('tr');
      const emitted = p.sink.numOutputRows > 0;
      const cells = [
        p.batchId,
        new Date(p.timestamp).toLocaleTimeString(),
        fmt(p.numInputRows),
        fmt(p.inputRowsPerSecond),
        emitted ? fmt(p.latencyMs.e2e.p50, 2) : '—',
        emitted ? fmt(p.latencyMs.e2e.p99, 2) : '—',
        p.stateOperators.length > 0 ? fmt(p.stateOperators.reduce((n, s) => n + s.numRowsTotal, 0)) : '—',
      ];
      for (const c of cells) tr.append(Object.assign(document.createElement('td'), { textContent: c }));
      return tr;
    });
  $('progress').tBodies[0].replaceChildren(...rows);
  const commits = [...v.recentCommits].reverse().map((c) => {
    const tr = document.createElement('tr');
    const cells = [
      c.epoch,
      new Date(c.committedAt).toLocaleTimeString(),
      fmt(c.durationMs, 2),
      fmt(c.logBytes),
    ];
    for (const cell of cells) tr.append(Object.assign(document.createElement('td'), { textContent: cell }));
    return tr;
  });
  $('commits').tBodies[0].replaceChildren(...commits);
}

function drawNav() {
  $('queries').replaceChildren(
    ...[...queries.values()].map((q) => {
      const b = document.createElement('button');
      b.textContent = q.view.name ?? q.view.id;
      b.setAttribute('aria-current', String(q.view.id === selected));
      b.addEventListener('click', () => select(q.view.id));
      return b;
    }),
  );
}

function select(id) {
  selected = id;
  previousTasks.delete(id);
  const q = queries.get(id);
  drawNav();
  drawPlan(q.view);
  render(q);
}

function render(q) {
  if (q.view.id !== selected) return;
  updateSummary(q);
  updatePlan(q);
  updateCharts(q);
}

// --- the stream ----------------------------------------------------------------------------------

function follow() {
  const events = new EventSource('/api/events');
  events.addEventListener('open', () => {
    $('connection').textContent = 'live';
  });
  events.addEventListener('error', () => {
    $('connection').textContent = 'reconnecting…';
  });
  events.addEventListener('query', (e) => {
    const data = JSON.parse(e.data);
    const q = upsert(data, data.recentProgress);
    if (selected === null) selected = data.id;
    drawNav();
    if (data.id === selected) {
      previousTasks.delete(data.id);
      drawPlan(q.view);
      render(q);
    }
  });
  events.addEventListener('progress', (e) => {
    const data = JSON.parse(e.data);
    const q = queries.get(data.id);
    if (q) addProgress(q, data.progress);
  });
  events.addEventListener('tick', (e) => {
    const data = JSON.parse(e.data);
    const q = upsert(data);
    render(q);
  });
}

makeCharts();
follow();
