// The benchmark's only plugin in OpenCode: it hands every bus event and tool
// hook to sessionpipe's plugin and to an empty plugin, in alternating order,
// and times each handler from the call to its return. Samples go to
// $BENCH_OUT as `<plugin> <kind> <ns>` lines; `kind` is `mapped` for what
// sessionpipe hands over and `passed` for what its filter passes over.
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const MAPPED = new Set(["session.created", "session.idle", "session.deleted", "permission.asked"]);
const out = fs.openSync(process.env.BENCH_OUT, "a");
const lines = [];
let flip = false;

const empty = {
  event: async () => {},
  "tool.execute.before": async () => {},
  "tool.execute.after": async () => {},
};

// From the call to the handler returning its promise: both handlers do all
// their work before they return (neither awaits), so what follows the return
// is OpenCode's own scheduling, not the plugin's cost.
async function time(name, kind, fn) {
  const t0 = process.hrtime.bigint();
  const settled = fn();
  lines.push(`${name} ${kind} ${process.hrtime.bigint() - t0}`);
  await settled;
}

export const BenchWrap = async (ctx) => {
  const mod = await import(pathToFileURL(process.env.BENCH_PLUGIN).href);
  const ours = await mod.SessionpipePlugin(ctx);
  const both = async (hook, kind, ...args) => {
    flip = !flip;
    const order = flip ? [["sessionpipe", ours], ["empty", empty]] : [["empty", empty], ["sessionpipe", ours]];
    for (const [name, p] of order) await time(name, kind, () => p[hook](...args));
  };
  return {
    event: async ({ event }) => {
      const t = event.type;
      const kind = MAPPED.has(t) || (t === "message.updated" && event.properties?.info?.role === "user") ? "mapped" : "passed";
      await both("event", kind, { event });
      if (t === "session.idle") fs.writeSync(out, lines.splice(0).join("\n") + "\n");
    },
    "tool.execute.before": (input, output) => both("tool.execute.before", "mapped", input, output),
    "tool.execute.after": (input, output) => both("tool.execute.after", "mapped", input, output),
  };
};
