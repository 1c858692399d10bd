// Tiny DOM helpers. Everything that comes from the server (nicks, dwarf names, reasons) is
// written with textContent: names come from strangers and must never be parsed as HTML.

/**
 * Make an element. `options`: className, text, attrs (plain attributes), dataset.
 * Children may be nodes or strings (strings become text nodes).
 */
export function el(tag, options = {}, ...children) {
  const node = document.createElement(tag);
  if (options.className) node.className = options.className;
  if (options.text !== undefined && options.text !== null) node.textContent = String(options.text);
  for (const [name, value] of Object.entries(options.attrs || {})) {
    if (name.toLowerCase().startsWith("on")) throw new Error(`no event attributes: ${name}`);
    if (value !== undefined && value !== null && value !== false) {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  Object.assign(node.dataset, options.dataset || {});
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** The element with this id; fails loudly when a page and its script disagree. */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing #${id}`);
  return node;
}

/** Set the text of an element (shorthand that keeps the textContent rule in one place). */
export function setText(node, text) {
  node.textContent = text === null || text === undefined ? "" : String(text);
}

export function show(node, visible = true) {
  node.hidden = !visible;
}
