// A scripted OpenAI chat-completions API on loopback for the OpenCode plugin
// benchmark: a turn request with no assistant message yet gets one `bash` call,
// the one carrying its result gets text; a request without tools (a title) gets
// text. Prints its port on stdout.
import http from "node:http";

let calls = 0;
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (req.url.endsWith("/models")) {
      res.end(JSON.stringify({ data: [{ id: "mock-model", object: "model" }] }));
      return;
    }
    const j = body ? JSON.parse(body) : {};
    const answered = (j.messages || []).some((m) => m.role === "assistant");
    res.writeHead(200, { "content-type": "text/event-stream" });
    const base = { id: "c", object: "chat.completion.chunk", created: 1, model: "mock-model" };
    const send = (delta, finish) =>
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish || null }] })}\n\n`);
    if (j.tools && !answered) {
      const id = `call_${String(++calls).padStart(24, "0")}`;
      send({ role: "assistant", tool_calls: [{ index: 0, id, type: "function", function: { name: "bash", arguments: "" } }] });
      send({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ command: "echo hello", description: "Print hello" }) } }] });
      send({}, "tool_calls");
    } else {
      send({ role: "assistant", content: j.tools ? "It printed hello." : "A title" });
      send({}, "stop");
    }
    res.end("data: [DONE]\n\n");
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
