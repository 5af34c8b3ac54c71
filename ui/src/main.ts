// Placeholder UI for the sessionpipe Tauri shell (src-tauri/).
//
// The real UI (sessions, sinks, pairing, notifications) arrives with the tray
// work. Until then this page only says so; it makes no IPC calls.
import "./style.css";

type Part = string | { code: string };

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string | null,
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== null) node.className = className;
  node.append(...children);
  return node;
}

function paragraph(className: string | null, parts: Part[]): HTMLParagraphElement {
  return el(
    "p",
    className,
    ...parts.map((part) => (typeof part === "string" ? part : el("code", null, part.code))),
  );
}

function render(root: HTMLElement): void {
  const card = el(
    "section",
    "card",
    el("h1", "brand", el("span", "mark", "s"), "sessionpipe"),
    paragraph(null, [
      "This window is a placeholder: the tray icon, menu and notifications arrive with the tray work.",
    ]),
    paragraph(null, [
      "Until then, run the daemon headless with ",
      { code: "sessionpipe daemon" },
      " and check it with ",
      { code: "sessionpipe status" },
      ".",
    ]),
    paragraph("muted", ["You can close this window; nothing here is running in the background."]),
  );
  root.replaceChildren(card);
}

const root = document.getElementById("app");
if (root === null) {
  throw new Error("sessionpipe: #app element missing from index.html");
}
render(root);
