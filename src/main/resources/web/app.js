// kernel-runner web client: no framework, no build step. Everything the server or a user wrote is put in the
// page as text (textContent), never as HTML.
"use strict";

const TOKEN_KEY = "kernel-runner.token";
const RUN_KEY = "kernel-runner.run";
const DRAFT_KEY = "kernel-runner.draft";
const TERMINAL = new Set(["BENCHMARKED", "PROFILED", "BASELINED", "COMPILE_ERROR", "WRONG_ANSWER", "RUNTIME_ERROR",
  "TIME_LIMIT_EXCEEDED", "ERROR", "CANCELLED"]);
const EVENT_TYPES = ["IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "CHECKED", "BENCHMARKING",
  "BENCHMARK_RESULT", "PROFILING", "PROFILE_RESULT", "VERIFIED", ...TERMINAL];
const PHASE_OF = {IN_QUEUE: "IN_QUEUE", PROVISIONING: "PROVISIONING", COMPILING: "COMPILING", CHECKING: "CHECKING",
  TEST_RESULT: "CHECKING", CHECKED: "CHECKING", BENCHMARKING: "BENCHMARKING", BENCHMARK_RESULT: "BENCHMARKING",
  PROFILING: "BENCHMARKING", PROFILE_RESULT: "BENCHMARKING"};
const PHASES = ["IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "BENCHMARKING", "END"];
// What a wait for a dstack GPU usually costs (the seed's provisioning card).
const TYPICAL_PROVISIONING = "Getting a GPU from the fleet usually takes 2 to 10 minutes when no node is idle.";

const $ = (id) => document.getElementById(id);
// catalog: the problems' and GPU types' load, which every view's own load waits for (the tabs work before it ends).
const state = {token: null, me: null, problems: [], gpuTypes: [], run: null, catalog: Promise.resolve()};

// ---- API

async function api(path, options = {}) {
  const headers = Object.assign({"Authorization": "Bearer " + state.token}, options.headers || {});
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, Object.assign({}, options, {headers}));
  const text = await response.text();
  let body = null;
  try {
    body = text ? parseJson(text) : null;
  } catch (e) {
    body = {message: text};
  }
  if (!response.ok) {
    const details = body && Array.isArray(body.details)
      ? body.details.map((d) => d.field + ": " + d.message).join("; ") : "";
    const error = new Error((body && body.message ? body.message : response.statusText) + (details ? " (" + details + ")" : ""));
    error.status = response.status;
    throw error;
  }
  return body;
}

// JSON.parse, keeping an integer too large for a double exact (as a BigInt) where the browser gives the source.
function parseJson(text) {
  return JSON.parse(text, (key, value, context) => typeof value === "number" && Number.isInteger(value)
    && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source) ? BigInt(context.source) : value);
}

function announce(text) {
  const announcer = $("announcer");
  announcer.textContent = "";
  // A fresh text node each time, so that repeated messages are read again.
  setTimeout(() => { announcer.textContent = text; }, 50);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") {
      node.className = value;
    } else if (key.startsWith("on")) {
      node.addEventListener(key.slice(2), value);
    } else {
      node.setAttribute(key, value);
    }
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

function fmt(value, digits = 4) {
  if (value === null || value === undefined || value === "") {
    return "–";
  }
  if (typeof value === "bigint") {
    return value.toString();
  }
  if (typeof value !== "number") {
    return String(value);
  }
  if (Number.isInteger(value)) {
    // An integer (a seed, a count, an index) is shown whole, never as 3.13e+8.
    return Math.abs(value) < 1e21 ? value.toString() : BigInt(value).toString();
  }
  if (value !== 0 && (Math.abs(value) < 0.001 || Math.abs(value) >= 1e6)) {
    return value.toExponential(2);
  }
  return Number(value.toPrecision(digits)).toString();
}

function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? s + " s" : Math.floor(s / 60) + " min " + (s % 60) + " s";
}

// ---- signing in

async function signIn(token) {
  state.token = token;
  state.me = await api("/api/me");
  localStorage.setItem(TOKEN_KEY, token);
  $("who-name").textContent = state.me.user_id + (state.me.admin ? " (admin)" : "");
  $("who").hidden = false;
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("admin-tab").hidden = !state.me.admin;
  state.catalog = loadCatalog();
  await state.catalog;
  const saved = sessionStorage.getItem(RUN_KEY);
  if (saved) {
    follow(saved);
  }
}

function signOut() {
  localStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(RUN_KEY);
  if (state.run && state.run.source) {
    state.run.source.close();
  }
  location.reload();
}

// ---- the submit form

async function loadCatalog() {
  const [problems, gpuTypes] = await Promise.all([api("/api/problems"), api("/api/gpu-types")]);
  state.problems = problems.problems;
  state.gpuTypes = gpuTypes.gpu_types;
  const problem = $("problem");
  problem.replaceChildren(...state.problems.map((p) => el("option", {value: p.slug}, p.title)));
  const gpu = $("gpu-type");
  // A type that takes nothing now is shown, disabled, with the reason; one whose work waits for a worker says so.
  gpu.replaceChildren(...state.gpuTypes.map((t) => {
    const option = el("option", {value: t.name}, t.name + " (" + t.backend + (t.accepting === false
      ? ", unavailable: " + t.unavailable_reason : t.available ? ", free now" : t.unavailable_reason
        ? ", " + t.unavailable_reason : ", " + t.queued + " queued") + ")");
    option.disabled = t.accepting === false;
    return option;
  }));
  const usable = [...gpu.options].find((o) => !o.disabled);
  if (usable && gpu.selectedOptions[0] && gpu.selectedOptions[0].disabled) {
    gpu.value = usable.value;
  }
  const draft = JSON.parse(localStorage.getItem(DRAFT_KEY) || "null");
  if (draft) {
    for (const field of ["problem", "language", "gpu-type", "mode"]) {
      if (draft[field] && [...$(field).options].some((o) => o.value === draft[field])) {
        $(field).value = draft[field];
      }
    }
  }
  problemChanged(draft && draft.code);
}

function currentProblem() {
  return state.problems.find((p) => p.slug === $("problem").value);
}

function problemChanged(code) {
  const problem = currentProblem();
  if (!problem) {
    return;
  }
  $("problem-description").textContent = problem.description;
  const dtype = $("dtype");
  const previous = dtype.value;
  dtype.replaceChildren(...problem.dtypes.map((d) => el("option", {value: d}, d)));
  if (problem.dtypes.includes(previous)) {
    dtype.value = previous;
  }
  const language = $("language");
  for (const option of language.options) {
    option.disabled = !problem.languages.includes(option.value);
  }
  if (language.selectedOptions[0].disabled) {
    language.value = problem.languages[0];
  }
  $("problem-signature").textContent = signature(problem, dtype.value);
  const editor = $("code");
  if (typeof code === "string" && code.trim()) {
    editor.value = code;
  } else if (!editor.value.trim() || editor.dataset.template === editor.value) {
    setTemplate();
  }
}

function cType(parameter, dtype) {
  let type = parameter.type;
  if (type === "float" && dtype === "float16") {
    type = "__half";
  } else if (type === "float" && dtype === "bfloat16") {
    type = $("language").value === "hip" ? "__hip_bfloat16" : "__nv_bfloat16";
  }
  return (parameter.const ? "const " : "") + type + (parameter.pointer ? "*" : "");
}

function parameterList(problem, dtype) {
  return problem.parameters.map((p) => cType(p, dtype) + " " + p.name).join(", ");
}

function signature(problem, dtype) {
  return 'extern "C" void solution(' + parameterList(problem, dtype) + ");";
}

function template(problem, language, dtype) {
  const params = parameterList(problem, dtype);
  const args = problem.parameters.map((p) => p.name).join(", ");
  const kernel = problem.slug.replace(/-/g, "_") + "_kernel";
  const includes = language === "hip" ? ["#include <hip/hip_runtime.h>"] : ["#include <cuda_runtime.h>"];
  if (dtype === "float16") {
    includes.push(language === "hip" ? "#include <hip/hip_fp16.h>" : "#include <cuda_fp16.h>");
  } else if (dtype === "bfloat16") {
    includes.push(language === "hip" ? "#include <hip/hip_bf16.h>" : "#include <cuda_bf16.h>");
  }
  const elements = problem.launch && problem.launch.elements;
  const launch = elements
    ? ["  size_t n = " + elements + ";", "  int threads = 256;",
       "  int blocks = (int) ((n + threads - 1) / threads);",
       "  " + kernel + "<<<blocks, threads>>>(" + args + ");"]
    : ["  dim3 threads(16, 16);", "  dim3 blocks(1, 1);  // TODO: cover the whole output",
       "  " + kernel + "<<<blocks, threads>>>(" + args + ");"];
  return [...includes, "",
    "// " + problem.title + ": " + problem.description, "",
    "__global__ void " + kernel + "(" + params + ") {",
    "  size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x;",
    "  // TODO: your kernel",
    "}", "",
    "// Called with device pointers; launch your kernel(s) on the default stream.",
    'extern "C" void solution(' + params + ") {",
    ...launch,
    "}", ""].join("\n");
}

function setTemplate() {
  const problem = currentProblem();
  const text = template(problem, $("language").value, $("dtype").value);
  $("code").value = text;
  $("code").dataset.template = text;
}

function saveDraft() {
  localStorage.setItem(DRAFT_KEY, JSON.stringify({problem: $("problem").value, language: $("language").value,
    "gpu-type": $("gpu-type").value, mode: $("mode").value, code: $("code").value}));
}

async function submit(event) {
  event.preventDefault();
  const error = $("submit-error");
  error.hidden = true;
  const button = $("submit-button");
  button.disabled = true;
  try {
    saveDraft();
    const created = await api("/api/submissions", {method: "POST", body: JSON.stringify({
      problem: $("problem").value, language: $("language").value, gpu_type: $("gpu-type").value,
      dtype: $("dtype").value, mode: $("mode").value, code: $("code").value,
      // Leaving the page for longer than the grace period cancels the run; a reload does not.
      cancel_on_disconnect: true})});
    announce("Submitted. Queued at position " + created.position + ".");
    await follow(created.id, {fromForm: true});
    $("run").scrollIntoView({behavior: "smooth", block: "start"});
  } catch (e) {
    error.textContent = "Not submitted: " + e.message;
    error.hidden = false;
  } finally {
    button.disabled = false;
  }
}

// ---- following a submission

// Runs their author looked away from (another submission, the history, a leaderboard entry) keep their streams
// until they end: a run is cancelled when its page is gone (cancel_on_disconnect), never when its view is.
const watched = new Map();

async function follow(id, options = {}) {
  const previous = state.run;
  if (previous && previous.source) {
    clearInterval(previous.ticker);
    if (previous.finished || previous.id === id) {
      previous.source.close();
    } else {
      watched.set(previous.id, previous);
    }
  }
  if (watched.has(id)) {
    watched.get(id).source.close(); // followed again in the view: its new stream takes over
    watched.delete(id);
  }
  const run = {id, lastSeq: 0, source: null, ticker: null, provisioningSince: null, backend: null,
    rows: new Map(), finished: false, mode: "benchmark"};
  state.run = run;
  sessionStorage.setItem(RUN_KEY, id);
  showView("submit");
  resetRunView(id);
  try {
    const submission = await api("/api/submissions/" + encodeURIComponent(id) + "?include=code");
    run.mode = submission.mode;
    if (run === state.run) {
      showCode(submission, !options.fromForm);
    }
    const invalidated = $("run-invalidated");
    invalidated.hidden = !submission.invalidated;
    invalidated.textContent = submission.invalidated ? "Taken off the leaderboards by " + submission.invalidated.by
      + ": " + submission.invalidated.reason : "";
    // Profile mode's last phase takes the benchmark's place in the timeline.
    phaseItem("BENCHMARKING").querySelector(".phase").textContent =
      run.mode === "profile" ? "Profiling" : "Benchmarking";
  } catch (e) {
    if (e.status === 404) {
      sessionStorage.removeItem(RUN_KEY);
      $("run").hidden = true;
      return;
    }
  }
  if (run === state.run) {
    connect();
  }
}

function connect(run = state.run) {
  // The first connection replays everything after lastSeq; the browser's own reconnects send Last-Event-ID.
  const url = "/api/submissions/" + encodeURIComponent(run.id) + "/events?access_token="
    + encodeURIComponent(state.token) + "&last_event_id=" + run.lastSeq;
  const source = new EventSource(url);
  run.source = source;
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (message) => onFrame(run, parseJson(message.data)));
  }
  source.onerror = () => {
    if (run.finished || (run !== state.run && !watched.has(run.id))) {
      source.close();
      return;
    }
    if (source.readyState === EventSource.CLOSED) {
      // The server ended the stream early (a slow client is cut off): come back where we were.
      setTimeout(() => { if ((run === state.run || watched.has(run.id)) && !run.finished) { connect(run); } }, 1000);
    }
  };
}

// The submission's own code (GET ?include=code: its owner's and admins' only), open when a past one is opened.
function showCode(submission, open) {
  const box = $("run-code");
  if (typeof submission.code !== "string") {
    box.hidden = true;
    return;
  }
  $("run-code-title").textContent = "Its code (" + [submission.problem, submission.language, submission.dtype,
    submission.gpu_type].filter(Boolean).join(", ") + ")";
  $("run-code-text").textContent = submission.code;
  box.open = open;
  box.hidden = false;
  state.runCode = submission;
}

// A past submission's code, problem and settings put back in the form, to edit and submit again.
function editCopy() {
  const s = state.runCode;
  if (!s) {
    return;
  }
  for (const [field, value] of [["problem", s.problem], ["language", s.language], ["gpu-type", s.gpu_type],
    ["mode", s.mode]]) {
    if (value && [...$(field).options].some((o) => o.value === value && !o.disabled)) {
      $(field).value = value;
    }
  }
  problemChanged(s.code);
  if (s.dtype && [...$("dtype").options].some((o) => o.value === s.dtype)) {
    $("dtype").value = s.dtype;
    $("problem-signature").textContent = signature(currentProblem(), s.dtype);
  }
  saveDraft();
  showView("submit");
  $("code").focus();
  $("submit-form").scrollIntoView({behavior: "smooth", block: "start"});
  announce("The code of " + s.id.slice(0, 8) + " is in the form.");
}

function resetRunView(id) {
  $("run").hidden = false;
  $("run-id").textContent = id.slice(0, 8);
  $("run-id").title = id;
  $("run-summary").textContent = "Connecting…";
  $("run-code").hidden = true;
  $("run-code-text").textContent = "";
  state.runCode = null;
  for (const li of $("timeline").children) {
    li.className = "";
    li.querySelector(".detail").textContent = "";
    const ticks = li.querySelector(".ticks");
    if (ticks) {
      ticks.replaceChildren();
    }
    const note = li.querySelector(".note");
    if (note) {
      note.hidden = true;
    }
  }
  $("outcome").replaceChildren();
  $("results").hidden = true;
  $("results-table").tBodies[0].replaceChildren();
  $("results-table").tFoot.replaceChildren();
  const notes = $("results-notes");
  notes.replaceChildren();
  Object.keys(notes.dataset).forEach((k) => delete notes.dataset[k]);
  $("chart").replaceChildren();
  $("chart-figure").hidden = true;
  $("run-facts").replaceChildren();
  $("profile").hidden = true;
  $("profile-table").tBodies[0].replaceChildren();
  $("profile-report").replaceChildren();
  $("cancel-button").hidden = false;
}

function phaseItem(phase) {
  return $("timeline").querySelector('[data-phase="' + phase + '"]');
}

function activate(phase) {
  const index = PHASES.indexOf(phase);
  PHASES.forEach((p, i) => {
    const li = phaseItem(p);
    if (i < index && li.className !== "failed") {
      li.className = "done";
    } else if (i === index) {
      li.className = "active";
    }
  });
}

function onFrame(run, frame) {
  if (run !== state.run) {
    const pending = frame.status === "BENCHMARKED" && ((frame.verification || {}).timing || {}).status === "pending";
    if (frame.status === "VERIFIED" || (TERMINAL.has(frame.status) && !pending)) {
      run.finished = true; // a run out of view has ended: its stream is no longer needed to keep it
      run.source.close();
      watched.delete(run.id);
    }
    return;
  }
  if (frame.seq <= run.lastSeq) {
    return;  // already shown (a replay after a reconnect)
  }
  run.lastSeq = frame.seq;
  const type = frame.status;
  const phase = PHASE_OF[type];
  if (phase) {
    activate(phase);
  }
  const detail = phase ? phaseItem(phase).querySelector(".detail") : null;
  switch (type) {
    case "IN_QUEUE":
      detail.textContent = frame.position === 0 ? "next in line" : frame.position + " ahead in the queue";
      summary(frame.position === 0 ? "Queued: next in line" : "Queued: " + frame.position + " ahead");
      break;
    case "PROVISIONING":
      provisioning(run, frame, detail);
      break;
    case "COMPILING":
      if (run.provisioningSince) {
        phaseItem("PROVISIONING").querySelector(".detail").textContent = [run.provisioningText,
          "took " + duration(Date.parse(frame.at) - run.provisioningSince)].filter(Boolean).join(" · ");
        phaseItem("PROVISIONING").querySelector(".note").hidden = true;
      }
      stopTicker(run);
      detail.textContent = [frame.compiler, frame.arch].filter(Boolean).join(", ");
      summary("Compiling");
      break;
    case "CHECKING":
      detail.textContent = frame.total_tests ? "0 of " + frame.total_tests + " tests" : "";
      summary("Checking against the reference");
      break;
    case "TEST_RESULT": {
      const result = frame.result || {};
      const ok = result.status === "PASSED";
      const ticks = phaseItem("CHECKING").querySelector(".ticks");
      ticks.append(el("li", {class: ok ? "passed" : "failed"}, (ok ? "✓ " : "✗ ") + (result.name || "test " + result.test_id)));
      detail.textContent = ticks.children.length + (frame.total_tests ? " of " + frame.total_tests : "") + " tests";
      break;
    }
    case "CHECKED":
      detail.textContent = frame.passed_tests + " of " + frame.total_tests + " tests passed";
      if (run.mode === "check") {
        finish(run, frame);  // check mode ends here
      } else {
        summary("Checked: correct");
      }
      break;
    case "BENCHMARKING":
      detail.textContent = frame.total_tests ? frame.total_tests + " tests" : "";
      summary("Benchmarking");
      $("results").hidden = false;
      break;
    case "BENCHMARK_RESULT":
      resultRow(run, frame.result || {});
      detail.textContent = run.rows.size + " done";
      break;
    case "PROFILING":
      detail.textContent = [frame.tool, frame.total_tests ? frame.total_tests + " tests" : ""].filter(Boolean)
        .join(", ");
      summary("Profiling" + (frame.tool ? " with " + frame.tool : ""));
      $("profile").hidden = false;
      break;
    case "PROFILE_RESULT":
      profileRows(frame.result || {});
      detail.textContent = $("profile-table").tBodies[0].querySelectorAll("[data-test]").length + " tests done";
      break;
    case "VERIFIED":
      // The profiler's verdict on the times of a result published while it was still checking them.
      run.source.close();
      timesVerdict(frame.timing || {});
      break;
    default:
      if (TERMINAL.has(type)) {
        finish(run, frame);
      }
  }
}

function timingText(timing) {
  return timing.status === "verified" ? "confirmed by " + timing.by
    : timing.status === "unverified" ? "NOT confirmed by " + timing.by
    : timing.status === "pending" ? "being checked by the profiler" + (timing.audit_reason
      ? " (" + timing.audit_reason + ")" : "") + "…" : timing.reason;
}

function timesVerdict(timing) {
  const times = $("times-fact");
  if (times) {
    times.textContent = timingText(timing) || "";
  }
  if (timing.status === "unverified") {
    $("outcome").replaceChildren(el("div", {class: "outcome-error", role: "status"},
      el("p", {}, el("strong", {}, "Unverified: "), "the profiler, timing the same kernel in a process of its own, "
        + "disagrees with these times."), ...(timing.problems || []).map((p) => el("p", {class: "help"}, p))));
  }
}

function provisioning(run, frame, detail) {
  run.backend = frame.backend || run.backend;
  if (!run.provisioningSince) {
    run.provisioningSince = Date.parse(frame.at) || Date.now();
  }
  const parts = [];
  if (frame.dstack_status) {
    parts.push("dstack: " + frame.dstack_status);
  }
  if (frame.instance) {
    parts.push(frame.instance);
  }
  if (frame.price_per_hour) {
    parts.push("$" + fmt(frame.price_per_hour, 3) + "/h");
  }
  run.provisioningText = parts.join(", ");
  const note = phaseItem("PROVISIONING").querySelector(".note");
  if (frame.message) {
    note.textContent = frame.message;
    note.hidden = false;
  }
  const tick = () => {
    const waited = Date.now() - run.provisioningSince;
    detail.textContent = [run.provisioningText, "waiting " + duration(waited)].filter(Boolean).join(" · ");
    if (run.backend === "dstack" && waited > 60000 && !frame.message) {
      note.textContent = TYPICAL_PROVISIONING;
      note.hidden = false;
    }
  };
  tick();
  if (!run.ticker) {
    run.ticker = setInterval(tick, 1000);
  }
  summary("Getting a GPU" + (run.backend ? " (" + run.backend + ")" : ""));
}

function stopTicker(run) {
  clearInterval(run.ticker);
  run.ticker = null;
}

function summary(text) {
  $("run-summary").textContent = text;
  announce(text);
}

// How each test's time was measured (runtime_stats arrives with BENCHMARK_RESULT only): marks and notes for the
// figures that were not plain GPU events, so an author sees which numbers to read with care.
const TIMING_NOTES = {
  "device-span": ["†", "† timed by the device span of all its GPU work: it ran on a stream the timer's events do not wait for."],
  clock: ["‡", "‡ many samples were taken while the GPU's clock was throttled, and were left out."],
  span: ["§", "§ under 20 µs a launch's own cost moves by several percent from run to run (Nsight Compute's figure too); " +
    "the figure in brackets is the device span of the call's GPU work, launch left out, which moves less."],
};

function resultRow(run, result) {
  const key = String(result.test_id !== undefined ? result.test_id : result.name);
  run.stats = run.stats || new Map();
  const stats = result.runtime_stats || run.stats.get(key);
  if (stats) {
    run.stats.set(key, stats);
  }
  const marks = [];
  if (stats && stats.timing === "device-span") {
    marks.push("device-span");
  }
  if (stats && stats.clock_flag) {
    marks.push("clock");
  }
  if (result.device_span_ms !== undefined && result.device_span_ms !== null) {
    marks.push("span");
  }
  const title = [stats && stats.method, stats && stats.device_span_method].filter(Boolean).join("; ");
  const runtime = el("td", title ? {title} : {},
    fmt(result.runtime_ms) + marks.map((m) => " " + TIMING_NOTES[m][0]).join("") +
    (marks.includes("span") ? " (" + fmt(result.device_span_ms) + ")" : ""));
  marks.forEach((m) => {
    const notes = $("results-notes");
    if (!notes.dataset[m.replace("-", "")]) {
      notes.dataset[m.replace("-", "")] = "1";
      notes.append(el("p", {class: "help"}, TIMING_NOTES[m][1]));
    }
  });
  const row = el("tr", {"data-test": key},
    el("td", {}, result.name || "test " + key), runtime, el("td", {}, fmt(result.gflops)),
    el("td", {}, fmt(result.bandwidth_gbs)), el("td", {}, fmt(result.reference_runtime_ms)),
    el("td", {}, result.speedup ? fmt(result.speedup, 3) + "×" : "–"));
  const existing = run.rows.get(key);
  if (existing) {
    existing.replaceWith(row);
  } else {
    $("results-table").tBodies[0].append(row);
  }
  run.rows.set(key, row);
}

// One row per kernel the solution launched in a test (PROFILE_RESULT); a test's rows are replaced if it comes again.
function profileRows(result) {
  const key = String(result.test_id !== undefined ? result.test_id : result.name);
  const body = $("profile-table").tBodies[0];
  body.querySelectorAll('[data-test="' + CSS.escape(key) + '"]').forEach((row) => row.remove());
  const kernels = result.kernels && result.kernels.length ? result.kernels : [{}];
  kernels.forEach((k, i) => {
    const micro = k.duration_ms !== undefined && k.duration_ms !== null ? k.duration_ms * 1000 : null;
    const hint = k.hint ? el("td", {title: k.hint, class: "hint"}, k.hint) : el("td", {}, "–");
    body.append(el("tr", {"data-test": key},
      el("td", {}, i === 0 ? result.name || "test " + key : ""),
      el("td", {class: "kernel", title: k.kernel || ""}, k.kernel || (result.kernels ? "no kernel" : "–")),
      el("td", {}, fmt(micro)), el("td", {}, fmt(k.dram_gbs)), el("td", {}, fmt(k.dram_pct_of_peak)),
      el("td", {}, fmt(k.sm_pct_of_peak)), el("td", {}, fmt(k.achieved_occupancy_pct)),
      el("td", {}, fmt(k.registers_per_thread)),
      el("td", {}, fmt((k.shared_mem_static_bytes || 0) + (k.shared_mem_dynamic_bytes || 0))),
      el("td", {}, k.grid_size ? k.grid_size + " × " + k.block_size : "–"), hint));
  });
}

// The report file, fetched with the token in a header (never in a URL), handed to the browser as a download.
async function downloadProfile(id, name) {
  const response = await fetch("/api/submissions/" + encodeURIComponent(id) + "/profile",
    {headers: {"Authorization": "Bearer " + state.token}});
  if (!response.ok) {
    announce("The profile report could not be downloaded (" + response.status + ")");
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const link = el("a", {href: url, download: name});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function profiled(run, frame) {
  $("profile").hidden = false;
  const report = frame.report || {};
  const box = $("profile-report");
  if (report.stored) {
    const name = run.id + "-" + report.name;
    const button = el("button", {type: "button", id: "profile-download"}, "Download the report (" + report.name
      + ", " + Math.round(report.size / 1024) + " KiB)");
    button.addEventListener("click", () => downloadProfile(run.id, name));
    box.replaceChildren(button, el("span", {class: "help"}, " open it in " + (frame.tool || "the profiler")
      + "'s own viewer"));
  } else {
    box.replaceChildren(el("span", {class: "help"}, "No report file was kept"
      + (report.problem ? ": " + report.problem : ".")));
  }
  $("outcome").replaceChildren(el("div", {class: "outcome-ok"}, el("p", {}, "Correct, and profiled with "
    + [frame.tool, frame.tool_version].filter(Boolean).join(" ") + ": " + (frame.kernels || 0) + " kernel launches in "
    + (frame.total_tests || 0) + " tests.")));
  summary("Profiled: " + (frame.kernels || 0) + " kernel launches");
}

function finish(run, frame) {
  run.finished = true;
  stopTicker(run);
  const timing = (frame.verification || {}).timing || {};
  if (!(frame.status === "BENCHMARKED" && timing.status === "pending")) {
    run.source.close(); // else the stream goes on to the VERIFIED that follows
  }
  $("cancel-button").hidden = true;
  const type = frame.status;
  const success = type === "BENCHMARKED" || type === "CHECKED" || type === "PROFILED" || type === "BASELINED";
  const end = phaseItem("END");
  PHASES.forEach((p) => {
    const li = phaseItem(p);
    if (li.className === "active") {
      li.className = success ? "done" : "failed";
    }
  });
  end.className = success ? "done" : "failed";
  end.querySelector(".detail").textContent = type.replace(/_/g, " ").toLowerCase();
  const outcome = $("outcome");
  if (type === "BENCHMARKED") {
    benchmarked(run, frame);
    summary("Benchmarked: " + runtimeHeadline(frame)
      + (frame.geomean_speedup ? "; " + fmt(frame.geomean_speedup, 3) + "× the reference (geomean)" : ""));
    return;
  }
  if (type === "PROFILED") {
    profiled(run, frame);
    return;
  }
  if (type === "BASELINED") {
    baselined(frame);
    return;
  }
  if (type === "CHECKED") {
    outcome.replaceChildren(el("div", {class: "outcome-ok"}, el("p", {}, "Correct: " + frame.passed_tests + " of "
      + frame.total_tests + " tests passed.")));
    summary("Checked: correct");
    return;
  }
  const box = el("div", {class: "outcome-error"}, el("p", {}, el("strong", {}, type.replace(/_/g, " ")), ": ",
    frame.message || ""));
  if (type === "COMPILE_ERROR") {
    box.append(el("p", {class: "help"}, "Compiler output:"), el("pre", {class: "compiler-output"}, frame.details || ""));
  } else if (type === "WRONG_ANSWER" && frame.debug_info) {
    const facts = el("dl", {class: "facts"});
    flatten(frame.debug_info).forEach(([k, v]) => facts.append(el("dt", {}, k), el("dd", {}, fmt(v, 6))));
    box.append(facts);
  } else if (frame.details) {
    box.append(el("pre", {}, typeof frame.details === "string" ? frame.details : JSON.stringify(frame.details, null, 2)));
  }
  if (frame.cost_usd) {
    box.append(el("p", {}, "Cost: $" + fmt(frame.cost_usd, 3)));
  }
  outcome.replaceChildren(box);
  summary(type.replace(/_/g, " ").toLowerCase() + (frame.message ? ": " + frame.message : ""));
}

// An admin's baseline job: PyTorch's own medians per test, eager and compiled, now its GPU type's current ones.
function baselined(frame) {
  const tests = frame.tests || {};
  const eager = tests.eager || {};
  const compiled = tests.torch_compile || {};
  const rows = Object.keys(eager).map((name) => el("li", {}, name + ": eager " + fmt((eager[name] || {}).median)
    + " ms, torch.compile " + fmt((compiled[name] || {}).median) + " ms (medians)"));
  $("outcome").replaceChildren(el("div", {class: "outcome-ok"}, el("p", {}, "PyTorch's baselines of " + frame.problem
    + " (" + frame.dtype + ") on " + ((frame.hardware || {}).hardware || "this GPU")
    + ", now the current ones of its GPU type:"), el("ul", {}, ...rows)));
  summary("Baselines measured: " + Object.keys(eager).length + " tests");
}

// The figures over the tests, each named: the geomean (what the boards rank by) first, then the mean.
function runtimeHeadline(result) {
  const parts = [];
  if (typeof result.geomean_runtime_ms === "number") {
    parts.push(fmt(result.geomean_runtime_ms) + " ms geomean (what the boards rank by)");
  }
  if (typeof result.avg_runtime_ms === "number") {
    parts.push(fmt(result.avg_runtime_ms) + " ms mean");
  }
  return parts.length ? parts.join(", ") + " of the tests' medians" : "no runtime";
}

function flatten(object, prefix = "") {
  const pairs = [];
  for (const [key, value] of Object.entries(object)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      pairs.push(...flatten(value, prefix + key + "."));
    } else {
      pairs.push([prefix + key, value]);
    }
  }
  return pairs;
}

function benchmarked(run, frame) {
  $("results").hidden = false;
  const results = frame.test_results || [];
  results.forEach((r) => resultRow(run, r));
  $("results-table").tFoot.replaceChildren(
    el("tr", {"data-figure": "geomean"},
      el("td", {title: "what the boards rank by"}, "Geomean of the tests (the boards rank by it)"),
      el("td", {}, fmt(frame.geomean_runtime_ms)), el("td", {}, ""), el("td", {}, ""), el("td", {}, ""),
      el("td", {}, frame.geomean_speedup ? fmt(frame.geomean_speedup, 3) + "×" : "–")),
    el("tr", {"data-figure": "mean"},
      el("td", {}, "Mean of the tests"), el("td", {}, fmt(frame.avg_runtime_ms)), el("td", {}, fmt(frame.avg_gflops)),
      el("td", {}, ""), el("td", {}, ""), el("td", {}, "")));
  chart(results);
  const facts = $("run-facts");
  const device = frame.device || {};
  const end = device.end || device.start || {};
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") { facts.append(el("dt", {}, k), el("dd", {}, v)); } };
  add("Device", end.name || (device.runtime && device.runtime.device) || device.name);
  add("SM clock", end.sm_clock_mhz ? end.sm_clock_mhz + " MHz" : null);
  add("Temperature", end.temperature_c !== undefined ? end.temperature_c + " °C" : null);
  add("Geomean runtime", frame.geomean_runtime_ms ? fmt(frame.geomean_runtime_ms) + " ms (of the tests' medians; "
    + "what the boards rank by)" : null);
  add("Mean runtime", frame.avg_runtime_ms ? fmt(frame.avg_runtime_ms) + " ms (of the tests' medians)" : null);
  const overBaselines = (speedups) => Object.entries(speedups || {}).filter(([, x]) => typeof x === "number")
    .map(([method, x]) => x.toFixed(2) + "× PyTorch " + (method === "torch_compile" ? "torch.compile" : method));
  const over = overBaselines(frame.baseline_speedups);
  add("Over the baselines", over.length ? over.join(", ") + " (geomean over the tests, this GPU type's baselines)"
    : null);
  if (!frame.baseline_speedups && run && run.id) {
    // The live event has the times only; the stored result adds the speedups over this GPU type's baselines.
    api("/api/submissions/" + encodeURIComponent(run.id)).then((stored) => {
      const found = overBaselines((stored.result || {}).baseline_speedups);
      if (found.length && run === state.run && !facts.querySelector("[data-fact=baselines]")) {
        facts.append(el("dt", {"data-fact": "baselines"}, "Over the baselines"),
          el("dd", {}, found.join(", ") + " (geomean over the tests, this GPU type's baselines)"));
      }
    }).catch(() => {});
  }
  const verification = frame.verification || {};
  const timing = verification.timing || {};
  add("Checked by", verification.judge === "passed"
    ? "the judge, on inputs only it knew (" + verification.tests + " tests)" : null);
  add("Times", timingText(timing));
  const timesFact = facts.lastElementChild;
  if (timesFact && facts.lastElementChild.previousElementSibling
      && facts.lastElementChild.previousElementSibling.textContent === "Times") {
    timesFact.id = "times-fact";
  }
  const warnings = [];
  if (frame.unverified) {
    warnings.push(el("p", {}, el("strong", {}, "Unverified: "), "the profiler, timing the same kernel in a process "
      + "of its own, disagrees with these times."), ...(timing.problems || []).map((p) => el("p", {class: "help"}, p)));
  }
  if (frame.needs_review) {
    warnings.push(el("p", {}, el("strong", {}, "Needs review: "), "faster than the reference by more than the "
      + "service lets through unchecked; a person will look at it before it counts."));
  }
  if (warnings.length) {
    $("outcome").replaceChildren(el("div", {class: "outcome-error", role: "status"}, ...warnings));
  }
  add("Cost", frame.cost_usd !== undefined ? "$" + fmt(frame.cost_usd, 3) : null);
}

function chart(results) {
  const rows = results.filter((r) => r.runtime_ms && r.reference_runtime_ms);
  if (!rows.length) {
    return;
  }
  const box = $("chart");
  box.replaceChildren(...rows.map((r) => {
    const max = Math.max(r.runtime_ms, r.reference_runtime_ms);
    const yours = el("div", {class: "bar yours", role: "img",
      "aria-label": "yours " + fmt(r.runtime_ms) + " ms (median)"});
    yours.style.width = (100 * r.runtime_ms / max) + "%";
    const reference = el("div", {class: "bar reference", role: "img",
      "aria-label": "reference " + fmt(r.reference_runtime_ms) + " ms (median)"});
    reference.style.width = (100 * r.reference_runtime_ms / max) + "%";
    return el("div", {class: "chart-row"}, el("span", {}, r.name || "test " + r.test_id), el("div", {}, yours, reference));
  }));
  $("chart-figure").hidden = false;
}

// ---- cancelling

function confirmCancel() {
  return new Promise((resolve) => {
    const dialog = $("confirm-cancel");
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "cancel"), {once: true});
    dialog.showModal();
  });
}

async function cancel(id, admin) {
  if (!(await confirmCancel())) {
    return false;
  }
  try {
    await api((admin ? "/api/admin/submissions/" : "/api/submissions/") + encodeURIComponent(id) + "/cancel",
      {method: "POST"});
    announce("Cancelled.");
    return true;
  } catch (e) {
    announce("Could not cancel: " + e.message);
    alert("Could not cancel: " + e.message);
    return false;
  }
}

// ---- history and admin

function statusCell(status) {
  return el("td", {class: "status-" + status}, status.replace(/_/g, " ").toLowerCase());
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function fillFilter(select, values, any) {
  const current = select.value;
  select.replaceChildren(...(any ? [el("option", {value: ""}, "any")] : []),
    ...values.map(([value, label]) => el("option", {value}, label)));
  if ([...select.options].some((o) => o.value === current)) {
    select.value = current;
  }
}

const HISTORY_PAGE = 50;

// The history a page at a time (newest first): "Show older submissions" asks for the page after the last one
// shown (next_before), with the same filters; a change of filter starts again from the newest.
async function loadHistory(more = false) {
  if (!more) {
    fillFilter($("history-problem"), state.problems.map((p) => [p.slug, p.title]), true);
    fillFilter($("history-gpu"), state.gpuTypes.map((t) => [t.name, t.name]), true);
  }
  const query = new URLSearchParams({limit: String(HISTORY_PAGE)});
  if ($("history-problem").value) {
    query.set("problem", $("history-problem").value);
  }
  if ($("history-gpu").value) {
    query.set("gpu_type", $("history-gpu").value);
  }
  const history = state.history || {};
  if (more) {
    if (!history.next) {
      return;
    }
    query.set("before", history.next);
  }
  const asked = (history.asked || 0) + 1;
  state.history = Object.assign(history, {asked});
  $("history-more").disabled = true;
  let list;
  try {
    list = await api("/api/submissions?" + query);
  } finally {
    $("history-more").disabled = false;
  }
  if (state.history.asked !== asked) {
    return; // a newer request (another filter) has taken over
  }
  const body = $("history-table").tBodies[0];
  const rows = list.submissions.map(historyRow);
  if (more) {
    body.append(...rows);
  } else {
    state.ticked = [];
    $("compare-button").disabled = true;
    body.replaceChildren(...rows);
  }
  state.history.next = list.next_before || null;
  const shown = body.rows.length;
  $("history-more").hidden = !state.history.next;
  const filtered = $("history-problem").value || $("history-gpu").value;
  $("history-count").textContent = shown === 0 ? (filtered ? "No submission matches." : "No submissions yet.")
    : state.history.next ? "The newest " + shown + " shown." : "All " + shown + " shown.";
  if (more && rows.length) {
    rows[0].querySelector("input").focus();
  }
}

function historyRow(s) {
  const result = s.result || {};
  return el("tr", {"data-id": s.id},
    el("td", {}, el("input", {type: "checkbox", "aria-label": "Compare submission " + s.id.slice(0, 8),
      onchange: (event) => tick(s.id, event.target.checked)})),
    el("td", {}, when(s.created_at)), el("td", {}, s.problem), el("td", {}, s.language), el("td", {}, s.gpu_type),
    statusCell(s.status), el("td", {}, fmt(result.geomean_runtime_ms)), el("td", {}, fmt(s.avg_runtime_ms)),
    el("td", {}, fmt(s.avg_gflops)),
    el("td", {}, el("button", {type: "button", class: "link", onclick: () => follow(s.id),
      "aria-label": "Open submission " + s.id.slice(0, 8)}, "Open")));
}

function tick(id, on) {
  state.ticked = (state.ticked || []).filter((t) => t !== id);
  if (on) {
    state.ticked.push(id);
  }
  $("compare-button").disabled = state.ticked.length !== 2;
}

// A 95% confidence interval for the median of the samples: order statistics at n/2 -+ 1.96 sqrt(n)/2, the whole
// range under 6 samples (the server's leaderboard uses the same rule).
function medianInterval(samples) {
  if (!Array.isArray(samples) || !samples.length) {
    return null;
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const half = 1.959964 * Math.sqrt(n) / 2;
  const low = Math.max(1, Math.floor(n / 2 - half));
  const high = Math.min(n, Math.ceil(n / 2 + 1 + half));
  return [sorted[low - 1], sorted[high - 1]];
}

async function compare() {
  const [a, b] = await Promise.all(state.ticked.map((id) => api("/api/submissions/" + encodeURIComponent(id))));
  const tests = (s) => new Map((s.benchmark_results || []).map((r) => [String(r.test_id), r]));
  const ta = tests(a);
  const tb = tests(b);
  const figure = (r) => {
    if (!r) {
      return "–";
    }
    const interval = medianInterval(r.runtime_stats && r.runtime_stats.samples);
    return fmt(r.runtime_ms) + (interval ? " [" + fmt(interval[0]) + " – " + fmt(interval[1]) + "]" : "");
  };
  $("comparison-a").textContent = "A " + a.id.slice(0, 8) + " (ms: median [95% interval])";
  $("comparison-b").textContent = "B " + b.id.slice(0, 8) + " (ms: median [95% interval])";
  const ids = [...new Set([...ta.keys(), ...tb.keys()])];
  $("comparison-table").tBodies[0].replaceChildren(...ids.map((id) => {
    const ra = ta.get(id);
    const rb = tb.get(id);
    const ia = ra && medianInterval(ra.runtime_stats && ra.runtime_stats.samples);
    const ib = rb && medianInterval(rb.runtime_stats && rb.runtime_stats.samples);
    const overlap = ia && ib && ia[0] <= ib[1] && ib[0] <= ia[1];
    const ratio = ra && rb && ra.runtime_ms > 0 ? fmt(rb.runtime_ms / ra.runtime_ms, 3) + "×" : "–";
    return el("tr", {"data-test": id}, el("td", {}, (ra || rb).name || "test " + id), el("td", {}, figure(ra)),
      el("td", {}, figure(rb)), el("td", {}, ratio + (overlap ? " (within the noise)" : "")));
  }));
  if (!ids.length) {
    $("comparison-table").tBodies[0].replaceChildren(el("tr", {}, el("td", {colspan: "4"},
      "Neither has benchmark results to compare.")));
  }
  $("comparison").hidden = false;
}

async function loadBoard() {
  fillFilter($("boards-problem"), state.problems.map((p) => [p.slug, p.title]), false);
  fillFilter($("boards-gpu"), state.gpuTypes.map((t) => [t.name, t.name]), false);
  const problem = state.problems.find((p) => p.slug === $("boards-problem").value);
  fillFilter($("boards-dtype"), (problem ? problem.dtypes : ["float32"]).map((d) => [d, d]), false);
  const query = new URLSearchParams({gpu_type: $("boards-gpu").value, dtype: $("boards-dtype").value});
  const board = await api("/api/leaderboards/" + encodeURIComponent($("boards-problem").value) + "?" + query);
  $("board-entry").hidden = true;
  const body = $("boards-table").tBodies[0];
  if (!board.entries.length) {
    body.replaceChildren(el("tr", {}, el("td", {colspan: "7"}, "No accepted results yet.")));
    return;
  }
  body.replaceChildren(...board.entries.map((e) => el("tr", {class: e.tie ? "tie" : ""},
    el("td", {title: e.tie ? "a tie: within the noise of its neighbour" : ""}, e.rank + (e.tie ? "=" : "")),
    el("td", {}, e.user_id), el("td", {}, fmt(e.geomean_runtime_ms)),
    el("td", {}, fmt(e.interval_ms.low) + " – " + fmt(e.interval_ms.high)),
    el("td", {}, e.speedup ? fmt(e.speedup, 3) + "×" : "–"), el("td", {}, when(e.created_at)),
    el("td", {}, el("button", {type: "button", class: "link", onclick: () => openEntry(board, e),
      "aria-label": "Open submission " + e.submission_id.slice(0, 8)}, "Open")))));
}

// One's own entry (or any, for an admin) opens as the submission it is. Another person's code is theirs (the API
// shows it to its author and admins only), so their entry shows what the board knows of it and its problem.
function openEntry(board, entry) {
  if (state.me.admin || entry.user_id === state.me.user_id) {
    follow(entry.submission_id);
    return;
  }
  const problem = state.problems.find((p) => p.slug === board.problem);
  $("board-entry-title").textContent = "Entry of " + entry.user_id + ", ranked " + entry.rank + (entry.tie ? "=" : "");
  const facts = $("board-entry-facts");
  facts.replaceChildren();
  const add = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
  add("Problem", problem ? problem.title + " (" + problem.slug + ")" : board.problem);
  add("GPU type, data type", board.gpu_type + ", " + board.dtype);
  add("Geomean runtime", fmt(entry.geomean_runtime_ms) + " ms (the geometric mean over its " + entry.tests
    + " tests of each test's median; what the board ranks by)");
  add("95% interval of the geomean", fmt(entry.interval_ms.low) + " – " + fmt(entry.interval_ms.high) + " ms");
  add("Speedup over the reference", entry.speedup ? fmt(entry.speedup, 3) + "× (geomean over the tests)" : "–");
  add("Submitted", when(entry.created_at));
  add("Submission", entry.submission_id);
  $("board-entry-code").textContent = "Its code is " + entry.user_id + "'s: only its author and the admins can "
    + "read it.";
  $("board-entry-problem").textContent = problem ? problem.description : "";
  $("board-entry-start").dataset.slug = board.problem;
  const box = $("board-entry");
  box.hidden = false;
  box.scrollIntoView({behavior: "smooth", block: "nearest"});
  announce("The entry of " + entry.user_id + ": " + fmt(entry.geomean_runtime_ms) + " ms geomean.");
}

// ---- the problem browser

// The catalog searched by the server (GET /api/problems?q=&level=&tag=); a problem's details come from
// GET /api/problems/{slug}: its solution() per language and dtype and a starter that compiles.
async function loadProblems() {
  const all = state.problems;
  const levels = [...new Set(all.map((p) => p.level).filter((l) => l !== undefined && l !== null))]
    .sort((a, b) => a - b);
  fillFilter($("problems-level"), levels.map((l) => [String(l), "level " + l]), true);
  const tags = [...new Set(all.flatMap((p) => Array.isArray(p.tags) ? p.tags : []))].sort();
  fillFilter($("problems-tag"), tags.map((t) => [t, t]), true);
  const query = new URLSearchParams();
  const text = $("problems-search").value.trim();
  if (text) {
    query.set("q", text);
  }
  if ($("problems-level").value) {
    query.set("level", $("problems-level").value);
  }
  if ($("problems-tag").value) {
    query.set("tag", $("problems-tag").value);
  }
  const asked = (state.problemsAsked || 0) + 1;
  state.problemsAsked = asked;
  const list = await api("/api/problems" + (query.toString() ? "?" + query : ""));
  if (state.problemsAsked !== asked) {
    return; // typed on: a newer search has taken over
  }
  const problems = list.problems;
  $("problems-count").textContent = problems.length === all.length && !query.toString()
    ? "All " + problems.length + " problems." : problems.length + " of " + all.length + " problems match.";
  $("problems-table").tBodies[0].replaceChildren(...problems.map((p) => el("tr", {"data-slug": p.slug},
    el("td", {}, el("strong", {}, p.title), " ", el("code", {}, p.slug)),
    el("td", {}, p.level !== undefined && p.level !== null ? String(p.level) : "–"),
    el("td", {}, (p.tags || []).join(", ")), el("td", {}, (p.dtypes || []).join(", ")),
    el("td", {}, p.attribution ? [p.attribution.source, p.attribution.license].filter(Boolean).join(", ") : "–"),
    el("td", {}, el("button", {type: "button", class: "link", onclick: () => showProblem(p.slug),
      "aria-label": "Details of " + p.slug}, "Details")))));
  if (!problems.length) {
    $("problems-table").tBodies[0].replaceChildren(el("tr", {}, el("td", {colspan: "6"}, "No problem matches.")));
  }
}

/** Per GPU type and dtype, each method's median on the largest test (the last the baselines list). */
function baselineText(baselines) {
  const groups = new Map();
  for (const b of baselines) {
    const key = b.gpu_type + " " + b.dtype;
    const tests = Object.keys(b.tests || {});
    const last = tests[tests.length - 1];
    if (!last) {
      continue;
    }
    const name = b.method === "torch_compile" ? "torch.compile" : b.method;
    const group = groups.get(key) || {test: last, parts: []};
    group.parts.push(name + " " + Number(b.tests[last].median).toFixed(4) + " ms");
    groups.set(key, group);
  }
  return [...groups].map(([key, g]) => key + ", " + g.test + " (median): " + g.parts.join(", ")).join("; ");
}

async function showProblem(slug) {
  const detail = await api("/api/problems/" + encodeURIComponent(slug));
  state.problemDetail = detail;
  $("problem-detail-title").textContent = detail.title + " (" + detail.slug + ")";
  $("problem-detail-description").textContent = detail.description;
  const facts = $("problem-detail-facts");
  facts.replaceChildren();
  const add = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
  add("Level", detail.level !== undefined && detail.level !== null ? String(detail.level) : "–");
  add("Tags", (detail.tags || []).join(", ") || "–");
  add("Data types", (detail.dtypes || []).join(", "));
  if (detail.attribution) {
    add("Source", [detail.attribution.source, detail.attribution.license && "licence: " + detail.attribution.license]
      .filter(Boolean).join("; "));
  }
  // Baselines (PyTorch eager, torch.compile) as the service measured them on each GPU type; none are made up.
  const measured = (await api("/api/baselines?problem=" + encodeURIComponent(slug))).baselines || [];
  add("Baselines", measured.length ? baselineText(measured) : "not measured yet");
  const languages = Object.keys(detail.signatures || {});
  fillFilter($("problem-detail-language"), languages.map((l) => [l, l === "hip" ? "HIP" : l.toUpperCase()]), false);
  if (languages.includes($("language").value) && !$("problem-detail-language").dataset.chosen) {
    $("problem-detail-language").value = $("language").value;
  }
  detailSignature();
  $("problem-detail").hidden = false;
  $("problem-detail").scrollIntoView({behavior: "smooth", block: "nearest"});
}

function detailSignature() {
  const detail = state.problemDetail;
  if (!detail) {
    return;
  }
  const byDtype = (detail.signatures || {})[$("problem-detail-language").value] || {};
  fillFilter($("problem-detail-dtype"), Object.keys(byDtype).map((d) => [d, d]), false);
  const signature = byDtype[$("problem-detail-dtype").value] || {};
  $("problem-detail-kernel").textContent = (signature.kernel || "") + ";";
  $("problem-detail-host").textContent = (signature.host || "") + ";";
  $("problem-detail-launch").textContent = detail.launch_note ? "How it is launched: " + detail.launch_note + "."
    : "";
  $("problem-detail-includes").textContent = signature.includes && signature.includes.length
    ? "Headers its types need: " + signature.includes.join(", ") : "";
  const starterDtype = (detail.dtypes || [])[0];
  $("problem-detail-start").textContent = "Load the starter into the editor (" + $("problem-detail-language").value
    .toUpperCase() + ", " + starterDtype + ")";
}

// The problem's starter (a kernel that compiles and fails every test until written) put in the editor. Code the
// author had there is kept, to put back.
function loadStarter() {
  const detail = state.problemDetail;
  const language = $("problem-detail-language").value;
  const code = detail && detail.starter && detail.starter[language];
  if (typeof code !== "string") {
    return;
  }
  const editor = $("code");
  if (editor.value.trim() && editor.value !== editor.dataset.template) {
    state.replacedCode = {problem: $("problem").value, language: $("language").value, dtype: $("dtype").value,
      code: editor.value};
    $("code-replaced").hidden = false;
  } else {
    $("code-replaced").hidden = true;
  }
  $("problem").value = detail.slug;
  $("language").value = language;
  problemChanged();
  $("dtype").value = detail.dtypes[0];
  $("problem-signature").textContent = signature(currentProblem(), detail.dtypes[0]);
  editor.value = code;
  editor.dataset.template = code;
  saveDraft();
  showView("submit");
  editor.focus();
  $("submit-form").scrollIntoView({behavior: "smooth", block: "start"});
  announce("The starter of " + detail.title + " is in the editor.");
}

function restoreCode() {
  const saved = state.replacedCode;
  if (!saved) {
    return;
  }
  $("problem").value = saved.problem;
  $("language").value = saved.language;
  problemChanged(saved.code);
  if ([...$("dtype").options].some((o) => o.value === saved.dtype)) {
    $("dtype").value = saved.dtype;
  }
  saveDraft();
  state.replacedCode = null;
  $("code-replaced").hidden = true;
  $("code").focus();
}

// Starts the problem of another person's entry: its details in the problem browser, with the starter a click away.
function startProblem(slug) {
  showView("problems");
  showProblem(slug).catch((e) => announce("The problem could not be loaded: " + e.message));
}

const FAST_P_NAMES = {eager: "PyTorch eager (stored)", torch_compile: "torch.compile (stored)"};

async function loadMe() {
  const level = $("me-level").value;
  const me = await api("/api/me" + (level ? "?level=" + encodeURIComponent(level) : ""));
  $("me-quotas").replaceChildren(...Object.entries(me.quotas || {}).map(([name, q]) => el("li", {},
    name.replace(/_/g, " ") + ": " + q.used + " of " + (q.limit === null ? "no limit" : q.limit))));
  const fast = me.fast_p || {};
  const tables = [["PyTorch eager (timed in each run)", fast.baseline, fast.gpu_types || {}]];
  for (const [key, table] of Object.entries(fast.baselines || {})) {
    tables.push([FAST_P_NAMES[key] || key, table.baseline, table.gpu_types || {}]);
  }
  const rows = [];
  for (const [name, about, types] of tables) {
    for (const [gpu, f] of Object.entries(types)) {
      rows.push(el("tr", {}, el("td", {title: about || ""}, name), el("td", {}, gpu),
        el("td", {}, f.solved + " of " + f.problems), ...["fast_0", "fast_1", "fast_2"].map((k) =>
          el("td", {class: "num"}, (100 * f[k]).toFixed(1) + "%"))));
    }
  }
  $("fastp-table").tBodies[0].replaceChildren(...(rows.length ? rows
    : [el("tr", {}, el("td", {colspan: "6"}, "No accepted result yet" + (level ? " at this level." : ".")))]));
}

async function loadAdmin() {
  const list = await api("/api/submissions?limit=200");
  const unfinished = list.submissions.filter((s) => !s.finished_at);
  const body = $("admin-table").tBodies[0];
  if (!unfinished.length) {
    body.replaceChildren(el("tr", {}, el("td", {colspan: "7"}, "Nothing is running or queued.")));
    return;
  }
  body.replaceChildren(...unfinished.map((s) => el("tr", {},
    el("td", {}, when(s.created_at)), el("td", {}, s.user_id), el("td", {}, s.problem), el("td", {}, s.gpu_type),
    statusCell(s.status), el("td", {}, s.node || ""),
    el("td", {}, el("button", {type: "button", class: "danger", "aria-label": "Cancel submission " + s.id.slice(0, 8),
      onclick: async () => { if (await cancel(s.id, true)) { loadAdmin(); } }}, "Cancel")))));
}

function showView(name) {
  for (const view of ["submit", "problems", "history", "boards", "me", "admin"]) {
    $("view-" + view).hidden = view !== name;
  }
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.view === name) {
      tab.setAttribute("aria-current", "page");
    } else {
      tab.removeAttribute("aria-current");
    }
  }
  // Each after the catalog: a view opened before it came had no problems to list, and kept none.
  const loads = {history: [loadHistory, "History"], problems: [loadProblems, "The problems"],
    boards: [loadBoard, "The leaderboard"], me: [loadMe, "Your figures"], admin: [loadAdmin, "The admin list"]};
  if (loads[name]) {
    const [load, what] = loads[name];
    state.catalog.then(() => load()).catch((e) => announce(what + " could not be loaded: " + e.message));
  }
}

// ---- wiring

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = $("sign-in-error");
    error.hidden = true;
    try {
      await signIn($("token").value.trim());
    } catch (e) {
      error.textContent = e.status === 401 ? "That token is not valid." : "Sign-in failed: " + e.message;
      error.hidden = false;
    }
  });
  $("sign-out").addEventListener("click", signOut);
  $("problem").addEventListener("change", () => problemChanged());
  $("language").addEventListener("change", () => problemChanged());
  $("dtype").addEventListener("change", () => problemChanged());
  $("reset-template").addEventListener("click", setTemplate);
  $("submit-form").addEventListener("submit", submit);
  $("mode").addEventListener("change", saveDraft);
  $("code").addEventListener("input", saveDraft);
  $("code").addEventListener("keydown", (event) => {
    // Tab indents; Escape then Tab leaves the editor (keyboard users are not trapped).
    if (event.key === "Tab" && !event.shiftKey && !event.target.dataset.escaped) {
      event.preventDefault();
      event.target.setRangeText("    ", event.target.selectionStart, event.target.selectionEnd, "end");
      saveDraft();
    } else if (event.key === "Escape") {
      event.target.dataset.escaped = "1";
    } else {
      delete event.target.dataset.escaped;
    }
  });
  $("cancel-button").addEventListener("click", async () => {
    if (state.run && !state.run.finished) {
      await cancel(state.run.id, false);
    }
  });
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => showView(tab.dataset.view));
  }
  $("history-refresh").addEventListener("click", () => loadHistory());
  $("history-more").addEventListener("click", () => loadHistory(true)
    .catch((e) => announce("Older submissions could not be loaded: " + e.message)));
  $("history-problem").addEventListener("change", () => loadHistory());
  $("history-gpu").addEventListener("change", () => loadHistory());
  $("compare-button").addEventListener("click", () => compare().catch((e) => announce("Comparison failed: " + e.message)));
  $("boards-refresh").addEventListener("click", () => loadBoard());
  for (const id of ["boards-problem", "boards-gpu", "boards-dtype"]) {
    $(id).addEventListener("change", () => loadBoard().catch((e) => announce("The leaderboard could not be loaded: "
      + e.message)));
  }
  $("admin-refresh").addEventListener("click", () => loadAdmin());
  $("me-level").addEventListener("change", () => loadMe().catch((e) => announce("Your figures could not be loaded: "
    + e.message)));
  let searching = null;
  $("problems-search").addEventListener("input", () => {
    clearTimeout(searching);
    searching = setTimeout(() => loadProblems().catch((e) => announce("The search failed: " + e.message)), 200);
  });
  for (const id of ["problems-level", "problems-tag"]) {
    $(id).addEventListener("change", () => loadProblems().catch((e) => announce("The search failed: " + e.message)));
  }
  $("problem-detail-language").addEventListener("change", () => {
    $("problem-detail-language").dataset.chosen = "1";
    detailSignature();
  });
  $("problem-detail-dtype").addEventListener("change", detailSignature);
  $("problem-detail-start").addEventListener("click", loadStarter);
  $("restore-code").addEventListener("click", restoreCode);
  $("run-code-edit").addEventListener("click", editCopy);
  $("board-entry-start").addEventListener("click", () => startProblem($("board-entry-start").dataset.slug));
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) {
    signIn(token).catch(() => {
      localStorage.removeItem(TOKEN_KEY);
      $("sign-in").hidden = false;
    });
  }
});
