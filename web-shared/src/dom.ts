// A few lines instead of a framework, for both pages (the UI and the
// receiver's phone page): build elements, fill them, keep focus across a
// redraw, a labelled field, a busy button. Owns no state and no words.

export type Child = Node | string | number | null | undefined | false | Child[];

type Handler = (event: Event) => void;
type AttrValue = string | number | boolean | null | undefined | Handler;
export type Attrs = Record<string, AttrValue>;

/** Set as properties as well as attributes (the attribute is only the default). */
const PROPS = new Set(["value", "checked", "selected", "disabled"]);

/**
 * `h("button", { class: "x", onclick: go }, "Go")`. `on*` attributes become
 * listeners; `false`, `null` and `undefined` leave an attribute out; `true`
 * sets it empty.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (typeof value === "function") {
      node.addEventListener(name.replace(/^on/, ""), value);
    } else if (PROPS.has(name)) {
      // The attribute too: it is the default a form's reset() goes back to.
      if (value === true) node.setAttribute(name, "");
      else if (typeof value === "string" || typeof value === "number") node.setAttribute(name, String(value));
      (node as unknown as Record<string, unknown>)[name] = value;
    } else if (value === true) {
      node.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      node.setAttribute(name, String(value));
    }
  }
  append(node, children);
  return node;
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces `target`'s children with `children` (the same kinds `h` takes). */
export function fill(target: Node, ...children: Child[]): void {
  target.textContent = "";
  append(target, children);
}

/** Inline code: `code("sessionpipe ui")`. */
export function code(text: string): HTMLElement {
  return h("code", null, text);
}

/** A sentence with `backticked` parts shown as code. */
export function prose(text: string): Child[] {
  return text.split(/(`[^`]+`)/).map((part) => (part.startsWith("`") && part.endsWith("`") && part.length > 1 ? code(part.slice(1, -1)) : part));
}

let ids = 0;
/** A fresh id for label/description links. */
export function uid(prefix: string): string {
  ids += 1;
  return `${prefix}-${ids}`;
}

/**
 * Replaces `target`'s children with `next`'s unless nothing changed, keeping the
 * focus on the element with the same `data-focus` key (a redraw every few
 * seconds must not throw a keyboard user back to the top). True when it changed.
 */
export function patch(target: HTMLElement, next: HTMLElement): boolean {
  if (target.innerHTML === next.innerHTML) return false;
  const active = document.activeElement;
  const key = active instanceof HTMLElement && target.contains(active) ? active.dataset["focus"] : undefined;
  target.replaceChildren(...Array.from(next.childNodes));
  if (key !== undefined) {
    target.querySelector<HTMLElement>(`[data-focus="${CSS.escape(key)}"]`)?.focus();
  }
  return true;
}

/** A message region: `role="alert"` for errors, `role="status"` otherwise. */
export function message(kind: "error" | "ok" | "info" | "warn", ...children: Child[]): HTMLElement {
  return h("div", { class: `message ${kind}`, role: kind === "error" ? "alert" : "status" }, ...children);
}

/** A labelled field: the label above, an optional hint under it, linked for screen readers. */
export function field(label: string, control: HTMLElement, hint?: Child): HTMLElement {
  const id = control.id || uid("f");
  control.id = id;
  let hintNode: HTMLElement | null = null;
  if (hint !== undefined && hint !== null && hint !== false) {
    hintNode = h("p", { class: "hint", id: `${id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintNode.id);
  }
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintNode);
}

/** Runs `work` with `button` disabled and showing `busy`, then puts it back. */
export async function busy<T>(button: HTMLButtonElement, words: string, work: () => Promise<T>): Promise<T> {
  const before = button.textContent ?? "";
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  button.textContent = words;
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
    button.textContent = before;
  }
}
