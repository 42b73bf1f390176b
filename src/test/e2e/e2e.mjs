// End-to-end tests of the web client in headless Chromium (Debian's package) against a running service with
// the test agent. Run by WebClientE2ETest: BASE_URL, USER_TOKEN, ADMIN_TOKEN, OTHER_TOKEN (another user),
// PAGER_TOKEN (a user with a history longer than a page), CHROMIUM, SHOTS.
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import net from "node:net";

const base = process.env.BASE_URL;
const userToken = process.env.USER_TOKEN;
const adminToken = process.env.ADMIN_TOKEN;
const otherToken = process.env.OTHER_TOKEN;
const pagerToken = process.env.PAGER_TOKEN;
const shots = process.env.SHOTS;
mkdirSync(shots, { recursive: true });
const WAIT = 30000;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const failures = [];
const problems = [];

async function scenario(name, body, allowed = []) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(name + ": page error: " + error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && !allowed.some((pattern) => pattern.test(message.text()))) {
      problems.push(name + ": console error: " + message.text());
    }
  });
  const started = Date.now();
  try {
    await body(page, context);
    console.log("ok   " + name + " (" + (Date.now() - started) + " ms)");
  } catch (error) {
    failures.push(name);
    console.log("FAIL " + name + ": " + (error.stack || error));
    await page.screenshot({ path: shots + "/failed-" + name.replace(/\W+/g, "-") + ".png", fullPage: true })
      .catch(() => {});
  } finally {
    await context.close();
  }
}

/** A TCP proxy in front of the service whose connections can all be cut at once: a real network drop. */
async function droppingProxy() {
  const target = new URL(base);
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const forget = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
    client.on("error", forget).on("close", forget);
    upstream.on("error", forget).on("close", forget);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: "http://127.0.0.1:" + server.address().port,
    drop: () => { const n = sockets.size; sockets.forEach((s) => s.destroy()); return n; },
    close: () => new Promise((resolve) => { sockets.forEach((s) => s.destroy()); server.close(resolve); }),
  };
}

async function signIn(page, token, origin = base) {
  await page.goto(origin + "/");
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#app").waitFor({ state: "visible", timeout: WAIT });
}

async function submitCode(page, code, problem = "leaky-relu") {
  await page.getByLabel("Problem", { exact: true }).selectOption(problem);
  await page.getByLabel("GPU type", { exact: true }).selectOption("local");
  await page.getByLabel("Code", { exact: true }).fill(code);
  await page.getByRole("button", { name: "Submit kernel" }).click();
  await page.locator("#run").waitFor({ state: "visible", timeout: WAIT });
  return (await page.locator("#run-id").getAttribute("title"));
}

async function summaryContains(page, text) {
  await page.locator("#run-summary").filter({ hasText: text }).waitFor({ timeout: WAIT });
}

async function api(path, token, method = "GET") {
  const response = await fetch(base + path, { method, headers: { Authorization: "Bearer " + token } });
  return response.json();
}

/** A submission made through the API (not the page); retried while the user's active runs are at their limit. */
async function post(token, fields) {
  for (let i = 0; ; i++) {
    const response = await fetch(base + "/api/submissions", { method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify(Object.assign({ problem: "leaky-relu", language: "cuda", gpu_type: "local",
        dtype: "float32", mode: "benchmark" }, fields)) });
    const body = await response.json();
    if (response.status === 201 || response.status === 202 || response.status === 200) {
      return body.id;
    }
    if (response.status !== 429 || i > 100) {
      throw new Error("submission refused: " + response.status + " " + JSON.stringify(body));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** Waits until the submission has ended (and, benchmarked, until the profiler's verdict on its times). */
async function ended(id, token) {
  for (let i = 0; i < 300; i++) {
    const s = await api("/api/submissions/" + id, token);
    const timing = ((s.result || {}).verification || {}).timing || {};
    if (s.finished_at && timing.status !== "pending") {
      return s;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("submission " + id + " did not end");
}

await scenario("sign-in-and-benchmark", async (page) => {
  await page.goto(base + "/");
  await page.getByLabel("API token").fill("not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#sign-in-error").filter({ hasText: "not valid" }).waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/sign-in.png" });
  await signIn(page, userToken);
  // The problem's description and signature, and a starter template that follows the language.
  await page.getByLabel("Problem", { exact: true }).selectOption("leaky-relu");
  assert.match(await page.locator("#problem-signature").textContent(),
    /extern "C" void solution\(const float\* input, float alpha, float\* output, size_t M, size_t N\);/);
  await page.getByLabel("Language").selectOption("hip");
  assert.match(await page.getByLabel("Code", { exact: true }).inputValue(), /#include <hip\/hip_runtime.h>/);
  await page.getByLabel("Language").selectOption("cuda");
  assert.match(await page.getByLabel("Code", { exact: true }).inputValue(), /leaky_relu_kernel<<<blocks, threads>>>/);
  const gpuOptions = await page.getByLabel("GPU type", { exact: true }).locator("option").allTextContents();
  assert.ok(gpuOptions.some((o) => o.startsWith("local (")), gpuOptions.join(", "));
  await page.screenshot({ path: shots + "/submit-form.png", fullPage: true });

  await submitCode(page, "// agent: replay:ok-cuda-leaky-relu\n");
  await summaryContains(page, "Benchmarked");
  const rows = page.locator("#results-table tbody tr");
  assert.equal(await rows.count(), 5, "one row per test");
  // Which figure is which: each test's median; over the tests, the geomean (what the boards rank by) and the mean.
  const shown = await api("/api/submissions/" + (await page.locator("#run-id").getAttribute("title")), userToken);
  const foot = page.locator("#results-table tfoot tr");
  assert.match(await foot.nth(0).textContent(), /^Geomean of the tests \(the boards rank by it\)/);
  assert.equal(await foot.nth(0).locator("td").nth(1).textContent(),
    String(Number(shown.result.geomean_runtime_ms.toPrecision(4))));
  assert.match(await foot.nth(1).textContent(), /^Mean of the tests/);
  assert.equal(await foot.nth(1).locator("td").nth(1).textContent(),
    String(Number(shown.result.avg_runtime_ms.toPrecision(4))));
  assert.match(await page.locator("#results-table thead").textContent(), /Runtime \(ms, median\)/);
  const said = await page.locator("#run-summary").textContent();
  assert.match(said, /ms geomean \(what the boards rank by\), [\d.e+-]+ ms mean of the tests' medians/, said);
  assert.match(await rows.nth(4).textContent(), /8192 x 8192/);
  assert.match(await rows.nth(4).locator("td").nth(1).getAttribute("title"), /CUDA events after an L2 read-flush/,
    "how the time was measured, on the runtime cell");
  const smallest = await rows.nth(0).locator("td").nth(1).textContent();
  assert.match(smallest, /0\.00256 § \(0\.00128\)/,
    "a kernel under 20 µs shows its device span beside the events' figure: " + smallest);
  assert.match(await rows.nth(0).locator("td").nth(1).getAttribute("title"), /device span of the call's GPU work/);
  assert.equal(await page.locator("#results-notes p").count(), 1, "one note, for the small kernels' second figure");
  assert.match(await page.locator("#results-notes").textContent(), /Nsight Compute's figure too/);
  assert.equal(await page.locator("#timeline .ticks li.passed").count(), 5, "a tick per passed test");
  assert.ok(await page.locator("#chart-figure").isVisible(), "the runtime chart");
  assert.match(await page.locator("#run-facts").textContent(), /NVIDIA H100 80GB HBM3/);
  // The speedups over the local type's stored baselines (the test's BASELINES_DIR), which the live event lacks.
  await page.locator("#run-facts").filter({ hasText: /Over the baselines[\d.]+× PyTorch eager, [\d.]+× PyTorch torch\.compile/ })
    .waitFor({ timeout: WAIT });
  assert.ok(!(await page.locator("#cancel-button").isVisible()), "no cancel once finished");
  await page.locator("#announcer").filter({ hasText: /Benchmarked/ }).waitFor({ timeout: WAIT });  // announced
  await page.screenshot({ path: shots + "/benchmarked.png", fullPage: true });
}, [/status of 401/]);  // the wrong token, on purpose

await scenario("a-time-that-escaped-the-events-is-marked", async (page) => {
  await signIn(page, userToken);
  await page.getByLabel("Problem", { exact: true }).selectOption("leaky-relu");
  await submitCode(page, "// agent: replay:escape-own-stream-20x\n");
  await summaryContains(page, "Benchmarked");
  const runtime = page.locator("#results-table tbody tr").nth(0).locator("td").nth(1);
  assert.match(await runtime.textContent(), /†/);
  assert.match(await runtime.getAttribute("title"), /device span/);
  assert.match(await page.locator("#results-notes").textContent(), /a stream the timer's events do not wait for/);
});

await scenario("a-profile-shows-each-kernel-and-downloads-its-report", async (page) => {
  await signIn(page, userToken);
  await page.getByLabel("Mode").selectOption("profile");
  const id = await submitCode(page, "// agent: replay:profile-cuda-leaky-relu\n");
  await summaryContains(page, "Profiled");
  assert.equal(await page.locator("#timeline [data-phase=BENCHMARKING] .phase").textContent(), "Profiling");
  const rows = page.locator("#profile-table tbody tr");
  assert.equal(await rows.count(), 5, "one row per kernel, one kernel per test (H100 transcript)");
  const last = rows.nth(4);
  assert.match(await last.textContent(), /8192 x 8192/);
  assert.match(await last.locator("td.kernel").textContent(), /solution\(const float \*, float, float \*/);
  assert.match(await last.locator("td.hint").getAttribute("title"), /Memory is more heavily utilized than Compute/);
  const dram = Number(await last.locator("td").nth(4).textContent());
  assert.ok(dram > 50 && dram <= 100, "DRAM share of peak at 8192 x 8192: " + dram);
  const [download] = await Promise.all([page.waitForEvent("download", { timeout: WAIT }),
    page.getByRole("button", { name: /Download the report/ }).click()]);
  assert.equal(download.suggestedFilename(), id + "-profile.ncu-rep");
  const size = (await (await download.createReadStream()).toArray()).reduce((n, chunk) => n + chunk.length, 0);
  const stored = await api("/api/submissions/" + id, userToken);
  assert.equal(size, stored.result.report.size, "the whole report");
  await page.screenshot({ path: shots + "/profiled.png", fullPage: true });
});

await scenario("an-unverified-time-is-shown-as-such", async (page) => {
  await signIn(page, userToken);
  await submitCode(page, "// agent: replay:adversarial-python-timer-patch-085x\n");
  await summaryContains(page, "Benchmarked");
  assert.match(await page.locator("#outcome").textContent(), /Unverified: the profiler, timing the same kernel/);
  assert.match(await page.locator("#outcome").textContent(), /test 5 \(8192 x 8192\): timed at/);
  assert.match(await page.locator("#run-facts").textContent(), /NOT confirmed by Nsight Compute/);
  assert.match(await page.locator("#run-facts").textContent(), /the judge, on inputs only it knew \(5 tests\)/);
});

await scenario("dstack-provisioning-shows-status-time-and-cost", async (page) => {
  await signIn(page, userToken);
  await page.getByLabel("Problem", { exact: true }).selectOption("leaky-relu");
  await page.getByLabel("GPU type", { exact: true }).selectOption("MI300X");
  await page.getByLabel("Code", { exact: true }).fill("// agent: ok\n");
  await page.getByRole("button", { name: "Submit kernel" }).click();
  const provisioning = page.locator('#timeline li[data-phase="PROVISIONING"] .detail');
  await provisioning.filter({ hasText: /dstack: (submitted|provisioning)/ }).waitFor({ timeout: WAIT });
  await provisioning.filter({ hasText: /waiting \d+ s/ }).waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/provisioning.png", fullPage: true });
  await summaryContains(page, "Benchmarked");
  assert.match(await page.locator("#run-facts").textContent(), /Cost\$0\.0123/);
  assert.match(await provisioning.textContent(), /took \d+ s/);
});

await scenario("compile-error", async (page) => {
  await signIn(page, userToken);
  await submitCode(page, "// agent: replay:fault-compile-error\n");
  await summaryContains(page, "compile error");
  const output = await page.locator("pre.compiler-output").textContent();
  assert.match(output, /identifier "undefined_symbol" is undefined/);
  assert.equal(await page.locator("#timeline li.failed").count() >= 1, true);
  await page.screenshot({ path: shots + "/compile-error.png", fullPage: true });
});

await scenario("wrong-answer", async (page) => {
  await signIn(page, userToken);
  await submitCode(page, "// agent: replay:fault-wrong\n", "vector-addition");
  await summaryContains(page, "wrong answer");
  const outcome = await page.locator("#outcome").textContent();
  assert.match(outcome, /max_abs_error/);
  // The transcript's seed is 313298177: shown whole, never as 3.13e+8.
  assert.match(outcome, /seed313298177/, outcome);
  assert.doesNotMatch(outcome, /\de\+\d/, "no exponent form for an integer: " + outcome);
  assert.equal(await page.locator("#timeline .ticks li.failed").count(), 1);
});

await scenario("cancel-from-the-page", async (page) => {
  await signIn(page, userToken);
  const id = await submitCode(page, "// agent: hang\n");
  await page.locator('#timeline li[data-phase="COMPILING"].active').waitFor({ timeout: WAIT });
  await page.getByRole("button", { name: "Cancel…" }).click();
  const dialog = page.getByRole("dialog", { name: "Cancel this submission?" });
  await dialog.waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/cancel-dialog.png" });
  // Keeping it running first: nothing happens.
  await dialog.getByRole("button", { name: "Keep running" }).click();
  assert.equal((await api("/api/submissions/" + id, userToken)).status, "COMPILING");
  await page.getByRole("button", { name: "Cancel…" }).click();
  await dialog.getByRole("button", { name: "Cancel submission" }).click();
  await summaryContains(page, "cancelled");
  assert.equal((await api("/api/submissions/" + id, userToken)).status, "CANCELLED");
  await page.screenshot({ path: shots + "/cancelled.png", fullPage: true });
});

await scenario("reload-mid-run-resumes-without-duplicates", async (page) => {
  await signIn(page, userToken);
  const id = await submitCode(page, "// agent: ok\n// delay: 0.4\n");
  await page.locator("#timeline .ticks li").first().waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/running.png", fullPage: true });
  await page.reload();
  await summaryContains(page, "Benchmarked");
  assert.equal(await page.locator("#run-id").getAttribute("title"), id, "the same submission after the reload");
  assert.equal(await page.locator("#timeline .ticks li").count(), 2, "each test ticked once");
  assert.equal(await page.locator("#results-table tbody tr").count(), 2, "each result row once");
  assert.equal((await api("/api/submissions/" + id, userToken)).status, "BENCHMARKED", "the reload did not cancel it");
});

await scenario("network-drop-resumes-with-last-event-id", async (page) => {
  const proxy = await droppingProxy();
  await signIn(page, userToken, proxy.url);
  const streams = [];
  page.on("request", async (request) => {
    if (request.url().includes("/events")) {
      const headers = await request.allHeaders();
      streams.push({ url: request.url(), lastEventId: headers["last-event-id"] });
    }
  });
  // 1 s between events: the drop must come while the run still streams (6 s after its first tick), on a loaded CI
  // machine too.
  const id = await submitCode(page, "// agent: ok\n// delay: 1.0\n");
  await page.locator("#timeline .ticks li").first().waitFor({ timeout: WAIT });
  assert.ok(proxy.drop() > 0, "connections were cut");
  await summaryContains(page, "Benchmarked");
  await proxy.close();
  assert.ok(streams.length >= 2, "the stream was re-opened after the drop: " + JSON.stringify(streams));
  assert.ok(streams.slice(1).some((s) => Number(s.lastEventId) > 0),
    "and resumed after the last event it had: " + JSON.stringify(streams));
  assert.equal(await page.locator("#timeline .ticks li").count(), 2, "each test ticked once");
  assert.equal(await page.locator("#results-table tbody tr").count(), 2, "each result row once");
  assert.equal((await api("/api/submissions/" + id, userToken)).status, "BENCHMARKED");
}, [/ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE/]);

await scenario("history", async (page) => {
  await signIn(page, userToken);
  await page.getByRole("button", { name: "History" }).click();
  const rows = page.locator("#history-table tbody tr");
  await rows.first().waitFor({ timeout: WAIT });
  assert.ok(await rows.count() >= 4, "the user's submissions");
  assert.match(await page.locator("#history-table").textContent(), /benchmarked/);
  const head = await page.locator("#history-table thead").textContent();
  assert.match(head, /Geomean runtime \(ms\)/);
  assert.match(head, /Mean runtime \(ms\)/);
  assert.doesNotMatch(head, /Avg/);
  const listed = (await api("/api/submissions?limit=50", userToken)).submissions;
  const benchmarked = listed.findIndex((s) => s.status === "BENCHMARKED" && s.result);
  const cells = rows.nth(benchmarked).locator("td");
  assert.equal(await cells.nth(6).textContent(), String(Number(listed[benchmarked].result.geomean_runtime_ms
    .toPrecision(4))), "the geomean column holds the geomean");
  assert.equal(await cells.nth(7).textContent(), String(Number(listed[benchmarked].avg_runtime_ms.toPrecision(4))),
    "the mean column holds the mean");
  await page.screenshot({ path: shots + "/history.png", fullPage: true });
  // Opening one replays it.
  await rows.first().getByRole("button", { name: /Open/ }).click();
  await page.locator("#run").waitFor({ state: "visible", timeout: WAIT });
  await page.locator("#timeline li[data-phase='END'].done, #timeline li[data-phase='END'].failed")
    .waitFor({ timeout: WAIT });
});

await scenario("looking-elsewhere-never-cancels-a-run", async (page) => {
  // The page asks to cancel its runs when it is gone (cancel_on_disconnect); switching views is not leaving.
  await signIn(page, userToken);
  const id = await submitCode(page, "// agent: ok\n// delay: 1.5\n");
  await page.getByRole("button", { name: "History" }).click();
  const rows = page.locator("#history-table tbody tr");
  await rows.nth(1).waitFor({ timeout: WAIT });
  await rows.nth(1).getByRole("button", { name: /Open/ }).click(); // another submission, in the run's view
  await page.locator("#run").waitFor({ state: "visible", timeout: WAIT });
  await page.waitForTimeout(7000); // past the service's disconnect grace (5 s here)
  let status = "";
  for (let i = 0; i < 100 && !["BENCHMARKED", "CANCELLED"].includes(status); i++) {
    status = (await api("/api/submissions/" + id, userToken)).status;
    await page.waitForTimeout(300);
  }
  assert.equal(status, "BENCHMARKED", "the run its author looked away from went on to its end");
});

await scenario("leaderboard-comparison-and-moderation", async (page) => {
  await signIn(page, userToken);
  const slow = await submitCode(page, "// agent: ok\n// timing: verified\n// runtime: 0.5\n");
  await summaryContains(page, "Benchmarked");
  const slower = await submitCode(page, "// agent: ok\n// timing: verified\n// runtime: 0.6\n");
  await summaryContains(page, "Benchmarked");
  const call = (path, token, options = {}) => fetch(base + path, Object.assign({ headers: {
    Authorization: "Bearer " + token, "Content-Type": "application/json" } }, options)).then((r) => r.json());
  // The profiler's verdict comes a second after the result; only then may it rank.
  for (let i = 0; i < 100; i++) {
    const timing = (await call("/api/submissions/" + slower, userToken)).result.verification.timing.status;
    if (timing !== "pending") {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  // History filtered by problem, two ticked and compared test by test.
  await page.getByRole("button", { name: "History" }).click();
  await page.locator("#history-problem").selectOption("leaky-relu");
  const rows = page.locator("#history-table tbody tr");
  await rows.first().waitFor({ timeout: WAIT });
  assert.match(await rows.nth(0).textContent(), /leaky-relu/);
  await rows.nth(1).getByRole("checkbox").check();
  await rows.nth(0).getByRole("checkbox").check();
  await page.getByRole("button", { name: "Compare the two ticked" }).click();
  const compared = page.locator("#comparison-table tbody tr");
  await compared.first().waitFor({ timeout: WAIT });
  assert.equal(await compared.count(), 2, "one row per test");
  assert.match(await compared.nth(0).textContent(), /n = 1024.*0\.5 \[.*0\.6 \[.*1\.2×$/);
  await page.locator("#history-problem").selectOption("vector-addition");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#history-table tbody tr")];
    return rows.length > 0 && rows.every((row) => row.textContent.includes("vector-addition"));
  }, null, { timeout: WAIT });
  await page.screenshot({ path: shots + "/comparison.png", fullPage: true });

  // The board: one entry per user, each their best.
  await page.getByRole("button", { name: "Leaderboards" }).click();
  await page.locator("#boards-problem").selectOption("leaky-relu");
  await page.locator("#boards-gpu").selectOption("local");
  const entries = page.locator("#boards-table tbody tr");
  await entries.first().waitFor({ timeout: WAIT });
  const board = await call("/api/leaderboards/leaky-relu?gpu_type=local", userToken);
  assert.ok(board.entries.length >= 1, JSON.stringify(board));
  assert.equal(await entries.count(), board.entries.length, "one row per entry");
  assert.equal(new Set(board.entries.map((e) => e.user_id)).size, board.entries.length, "one entry per user");
  assert.match(await entries.nth(0).locator("td").nth(0).textContent(), /^1=?$/);
  await page.screenshot({ path: shots + "/leaderboard.png", fullPage: true });

  // An admin takes one off the boards: its owner sees why on the submission.
  await call("/api/admin/submissions/" + slow + "/invalidate", adminToken, { method: "POST",
    body: JSON.stringify({ reason: "caches answers by input pointer" }) });
  await page.getByRole("button", { name: "History" }).click();
  await page.locator("#history-problem").selectOption("leaky-relu");
  await page.locator("#history-table tbody tr").nth(1).getByRole("button", { name: /Open/ }).click();
  await page.locator("#run-invalidated").filter({ hasText: "caches answers by input pointer" })
    .waitFor({ timeout: WAIT });
  assert.equal(await page.locator("#run-id").getAttribute("title"), slow);
});

await scenario("fast-p-on-the-you-page", async (page) => {
  // The user's accepted leaky-relu results (the scenario before) count on the local type, over each baseline.
  await signIn(page, userToken);
  await page.getByRole("button", { name: "You", exact: true }).click();
  const rows = page.locator("#fastp-table tbody tr");
  await rows.first().waitFor({ timeout: WAIT });
  const texts = await rows.allTextContents();
  assert.ok(texts.some((t) => /PyTorch eager \(timed in each run\)local[1-9]\d* of \d+/.test(t)), texts.join(" | "));
  assert.ok(texts.some((t) => /torch\.compile \(stored\)local/.test(t)), texts.join(" | "));
  assert.match(await page.locator("#me-quotas").textContent(), /max active: \d+ of/);
  await page.locator("#me-level").selectOption("2");
  await page.locator("#fastp-table tbody").filter({ hasText: "No accepted result yet at this level." })
    .waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/you.png", fullPage: true });
});

await scenario("admin-cancels-any-submission", async (page) => {
  const created = await fetch(base + "/api/submissions", { method: "POST",
    headers: { Authorization: "Bearer " + userToken, "Content-Type": "application/json" },
    body: JSON.stringify({ problem: "leaky-relu", language: "cuda", gpu_type: "local", dtype: "float32",
      code: "// agent: hang\n" }) }).then((r) => r.json());
  await signIn(page, adminToken);
  await page.getByRole("button", { name: "Admin" }).click();
  const cancel = page.getByRole("button", { name: "Cancel submission " + created.id.slice(0, 8) });
  await cancel.waitFor({ timeout: WAIT });
  await page.screenshot({ path: shots + "/admin.png", fullPage: true });
  await cancel.click();
  await page.getByRole("dialog").getByRole("button", { name: "Cancel submission" }).click();
  await cancel.waitFor({ state: "detached", timeout: WAIT });
  assert.equal((await api("/api/submissions/" + created.id, adminToken)).status, "CANCELLED");
});

await scenario("sign-out-shows-only-when-signed-in", async (page) => {
  await page.goto(base + "/");
  await page.getByLabel("API token").waitFor({ timeout: WAIT });
  assert.equal(await page.getByRole("button", { name: "Sign out" }).isVisible(), false,
    "no Sign out on the sign-in page");
  await signIn(page, userToken);
  assert.ok(await page.getByRole("button", { name: "Sign out" }).isVisible(), "Sign out once signed in");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API token").waitFor({ timeout: WAIT });
  assert.equal(await page.getByRole("button", { name: "Sign out" }).isVisible(), false, "and gone after it");
  assert.equal(await page.locator("#app").isVisible(), false);
});

await scenario("a-past-submission-shows-its-code", async (page) => {
  await signIn(page, userToken);
  const mark = "past-" + Date.now();
  const code = "// agent: ok\n// " + mark + "\n";
  const id = await submitCode(page, code, "vector-addition");
  await summaryContains(page, "Benchmarked");
  // The form moves on to something else...
  await page.getByLabel("Problem", { exact: true }).selectOption("leaky-relu");
  await page.getByRole("button", { name: "reset to the template" }).click();
  // ...and the submission, opened from the history, shows the code it ran.
  await page.getByRole("button", { name: "History" }).click();
  await page.getByRole("button", { name: "Open submission " + id.slice(0, 8) }).click();
  await page.locator("#run-code").filter({ hasText: mark }).waitFor({ timeout: WAIT });
  assert.equal(await page.locator("#run-code-text").textContent(), code, "the code, as it was sent");
  assert.equal(await page.locator("#run-code").getAttribute("open"), "", "open, for a past submission");
  assert.match(await page.locator("#run-code summary").textContent(), /vector-addition, cuda, float32, local/);
  await page.screenshot({ path: shots + "/past-code.png", fullPage: true });
  await page.getByRole("button", { name: "Edit a copy in the form" }).click();
  assert.equal(await page.getByLabel("Code", { exact: true }).inputValue(), code);
  assert.equal(await page.getByLabel("Problem", { exact: true }).inputValue(), "vector-addition");
});

await scenario("history-pages-past-the-first-fifty", async (page) => {
  // 55 submissions of one user (as fast as the agent ends them), more than a page of 50.
  const ids = [];
  for (const batch of [15, 15, 15, 10]) {
    const made = [];
    for (let i = 0; i < batch; i++) {
      made.push(await post(pagerToken, { mode: "check", code: "// agent: ok\n// n: " + (ids.length + i) + "\n" }));
    }
    for (const id of made) {
      await ended(id, pagerToken);
    }
    ids.push(...made);
  }
  await signIn(page, pagerToken);
  await page.getByRole("button", { name: "History" }).click();
  const rows = page.locator("#history-table tbody tr");
  await page.locator("#history-count").filter({ hasText: "The newest 50 shown." }).waitFor({ timeout: WAIT });
  assert.equal(await rows.count(), 50, "a page");
  const more = page.getByRole("button", { name: "Show older submissions" });
  await more.click();
  await page.locator("#history-count").filter({ hasText: "All 55 shown." }).waitFor({ timeout: WAIT });
  assert.equal(await rows.count(), 55, "then the rest");
  assert.equal(await more.isVisible(), false, "nothing more to show");
  const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.id));
  assert.deepEqual(shown, [...ids].reverse(), "each once, newest first");
  await page.screenshot({ path: shots + "/history-paged.png", fullPage: true });
  // A filter starts again from the newest.
  await page.locator("#history-problem").selectOption("vector-addition");
  await page.locator("#history-count").filter({ hasText: "No submission matches." }).waitFor({ timeout: WAIT });
  await page.locator("#history-problem").selectOption("leaky-relu");
  await page.locator("#history-count").filter({ hasText: "The newest 50 shown." }).waitFor({ timeout: WAIT });
});

await scenario("a-view-opened-before-the-catalog-came", async (page) => {
  // On a slow network the tabs are there before the list of problems: a view opened then waits for it (it kept
  // an empty problem picker for good: CI, on a loaded machine).
  await page.route("**/api/problems", async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await route.continue();
  });
  await signIn(page, userToken);
  await page.getByRole("button", { name: "Leaderboards" }).click();
  await page.locator("#boards-problem").selectOption("leaky-relu", { timeout: WAIT });
  await page.getByRole("button", { name: "History" }).click();
  await page.locator("#history-problem").selectOption("leaky-relu", { timeout: WAIT });
});

await scenario("another-users-board-entry", async (page) => {
  const theirs = await post(otherToken, { code: "// agent: ok\n// timing: verified\n// runtime: 0.3\n" });
  await ended(theirs, otherToken);
  await signIn(page, userToken);
  const asked = [];
  page.on("request", (request) => asked.push(request.url()));
  await page.getByRole("button", { name: "Leaderboards" }).click();
  await page.locator("#boards-problem").selectOption("leaky-relu");
  await page.locator("#boards-gpu").selectOption("local");
  const row = page.locator("#boards-table tbody tr").filter({ hasText: "lee" });
  await row.waitFor({ timeout: WAIT });
  const board = await api("/api/leaderboards/leaky-relu?gpu_type=local", userToken);
  const entry = board.entries.find((e) => e.submission_id === theirs);
  assert.ok(entry, JSON.stringify(board));
  await row.getByRole("button", { name: "Open submission " + theirs.slice(0, 8) }).click();
  const box = page.locator("#board-entry");
  await box.waitFor({ state: "visible", timeout: WAIT });
  assert.match(await page.locator("#board-entry-title").textContent(), /^Entry of lee, ranked \d+=?$/);
  const facts = await page.locator("#board-entry-facts").textContent();
  assert.match(facts, new RegExp("Geomean runtime" + String(Number(entry.geomean_runtime_ms.toPrecision(4)))
    .replace(".", "\\.") + " ms \\(the geometric mean over its \\d+ tests"), facts);
  assert.match(facts, /Leaky ReLU|leaky-relu/);
  assert.match(await page.locator("#board-entry-code").textContent(), /Its code is lee's: only its author and the admins/);
  assert.equal(await page.locator("#run").isVisible(), false, "no empty submission view");
  assert.ok(!asked.some((url) => url.includes(theirs)), "their submission is not asked for: " + asked.join(" "));
  await page.screenshot({ path: shots + "/board-entry.png", fullPage: true });
  // From there, the problem itself.
  await page.getByRole("button", { name: "Start this problem yourself" }).click();
  await page.locator("#problem-detail-title").filter({ hasText: "(leaky-relu)" }).waitFor({ timeout: WAIT });
});

await scenario("problem-browser-loads-the-starter", async (page) => {
  await signIn(page, userToken);
  await page.getByLabel("Code", { exact: true }).fill("// my own kernel\n");
  await page.getByRole("button", { name: "Problems", exact: true }).click();
  const rows = page.locator("#problems-table tbody tr");
  const all = (await api("/api/problems", userToken)).problems;
  await page.locator("#problems-count").filter({ hasText: "All " + all.length + " problems." })
    .waitFor({ timeout: WAIT });
  assert.equal(await rows.count(), all.length);
  const slugs = async () => rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.slug));
  // Search, then level, then tag: each as the server filters.
  await page.getByLabel("Search").fill("gelu");
  let expected = (await api("/api/problems?q=gelu", userToken)).problems.map((p) => p.slug);
  assert.ok(expected.includes("gelu") && expected.includes("new-gelu"), expected.join(", "));
  await page.locator("#problems-count").filter({ hasText: expected.length + " of " + all.length })
    .waitFor({ timeout: WAIT });
  assert.deepEqual(await slugs(), expected);
  await page.getByLabel("Search").fill("");
  await page.getByLabel("Level").selectOption("1");
  expected = (await api("/api/problems?level=1", userToken)).problems.map((p) => p.slug);
  await page.locator("#problems-count").filter({ hasText: expected.length + " of " + all.length })
    .waitFor({ timeout: WAIT });
  assert.deepEqual(await slugs(), expected);
  await page.getByLabel("Tag").selectOption("activation");
  expected = (await api("/api/problems?level=1&tag=activation", userToken)).problems.map((p) => p.slug);
  await page.locator("#problems-count").filter({ hasText: expected.length + " of " + all.length })
    .waitFor({ timeout: WAIT });
  assert.deepEqual(await slugs(), expected);
  assert.ok(expected.includes("sigmoid"));
  const sigmoidRow = rows.filter({ has: page.locator("code", { hasText: /^sigmoid$/ }) });
  assert.match(await sigmoidRow.textContent(), /Sigmoid sigmoid1element-wise, activationfloat32KernelBench level 1, 21_Sigmoid\.py, MIT/);
  // Its details: level, tags, source, the two forms of solution(), how it is launched, and the measured baselines.
  await sigmoidRow.getByRole("button", { name: "Details of sigmoid" }).click();
  await page.locator("#problem-detail-title").filter({ hasText: "Sigmoid (sigmoid)" }).waitFor({ timeout: WAIT });
  const facts = await page.locator("#problem-detail-facts").textContent();
  assert.match(facts, /Level1Tagselement-wise, activation/);
  assert.match(facts, /KernelBench level 1, 21_Sigmoid\.py; licence: MIT/);
  // The H100's, shipped in conf/baselines and loaded at the start.
  assert.match(facts, /BaselinesH100 float32, 8192 x 8192 \(median\): eager 0\.\d{4} ms, torch\.compile 0\.\d{4} ms/);
  assert.equal(await page.locator("#problem-detail-kernel").textContent(),
    "__global__ void solution(const float* input, float* output, size_t M, size_t N);");
  assert.equal(await page.locator("#problem-detail-host").textContent(),
    'extern "C" void solution(const float* input, float* output, size_t M, size_t N);');
  assert.match(await page.locator("#problem-detail-launch").textContent(), /one thread per element of M \* N/);
  await page.locator("#problem-detail-language").selectOption("hip");
  assert.match(await page.locator("#problem-detail-includes").textContent(), /<hip\/hip_runtime\.h>/);
  await page.screenshot({ path: shots + "/problems.png", fullPage: true });
  // The starter in the editor, the form set to its problem; the code that was there can be put back.
  const detail = await api("/api/problems/sigmoid", userToken);
  await page.getByRole("button", { name: /Load the starter into the editor \(HIP, float32\)/ }).click();
  await page.locator("#view-submit").waitFor({ state: "visible", timeout: WAIT });
  assert.equal(await page.getByLabel("Code", { exact: true }).inputValue(), detail.starter.hip);
  assert.equal(await page.getByLabel("Problem", { exact: true }).inputValue(), "sigmoid");
  assert.equal(await page.getByLabel("Language", { exact: true }).inputValue(), "hip");
  assert.equal(await page.getByLabel("Data type", { exact: true }).inputValue(), "float32");
  await page.getByRole("button", { name: "put your code back" }).click();
  assert.equal(await page.getByLabel("Code", { exact: true }).inputValue(), "// my own kernel\n");
});

await scenario("an-admin-watches-a-baseline-job", async (page) => {
  const response = await fetch(base + "/api/admin/baselines", { method: "POST",
    headers: { Authorization: "Bearer " + adminToken, "Content-Type": "application/json" },
    body: JSON.stringify({ gpu_type: "local", problems: ["relu"] }) });
  assert.equal(response.status, 202);
  const job = (await response.json()).jobs[0];
  await signIn(page, adminToken);
  await page.getByRole("button", { name: "History" }).click();
  await page.getByRole("button", { name: "Open submission " + job.id.slice(0, 8) }).click();
  await summaryContains(page, "Baselines measured: 2 tests");
  const outcome = await page.locator("#outcome").textContent();
  assert.match(outcome, /PyTorch's baselines of relu \(float32\) on Test GPU, now the current ones of its GPU type/);
  assert.match(outcome, /n = 1024: eager 2[.0-9]* ms, torch\.compile 1[.0-9]* ms/);
  await page.screenshot({ path: shots + "/baseline-job.png", fullPage: true });
});

await scenario("narrow-screen-and-labels", async (page, context) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, userToken);
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll("input, select, textarea")]
    .filter((c) => !c.labels.length && !c.getAttribute("aria-label")).map((c) => c.id));
  assert.deepEqual(unlabelled, [], "every control has a label");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, "no sideways scrolling on a phone: " + overflow + " px");
  // Keyboard: Tab reaches the problem picker from the top of the page.
  await page.keyboard.press("Tab");
  let reached = false;
  for (let i = 0; i < 10 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement && document.activeElement.id === "problem");
  }
  assert.ok(reached, "the form is reachable by keyboard");
  await page.screenshot({ path: shots + "/narrow.png", fullPage: true });
  // The problem browser and a problem's details fit too (wide tables scroll in their own box).
  await page.getByRole("button", { name: "Problems", exact: true }).click();
  await page.getByRole("button", { name: "Details of leaky-relu" }).click();
  await page.locator("#problem-detail").waitFor({ state: "visible", timeout: WAIT });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  const beyond = await page.evaluate(() => [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map((e) => e.tagName + "#" + e.id + "." + e.className).slice(0, 8).join(" "));
  assert.ok(wide <= 0, "no sideways scrolling in the problem browser: " + wide + " px (" + beyond + ")");
});

await browser.close();
if (problems.length) {
  console.log("page problems:\n  " + problems.join("\n  "));
}
if (failures.length || problems.length) {
  console.log("failed: " + failures.join(", "));
  process.exit(1);
}
console.log("all browser scenarios passed");
