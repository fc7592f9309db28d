/** Small DOM and formatting helpers of the console. Every text from the API is set with textContent. */

export const element = <T extends HTMLElement>(id: string): T => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing`);
  return found as T;
};

export function make<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  properties: Partial<{ text: string; className: string; title: string; id: string }> = {},
  children: (Node | string)[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (properties.text !== undefined) node.textContent = properties.text;
  if (properties.className) node.className = properties.className;
  if (properties.title) node.title = properties.title;
  if (properties.id) node.id = properties.id;
  node.append(...children);
  return node;
}

/** A button of type "button" (never a form submission) with its click handler. */
export function button(text: string, onClick: () => void, className = ''): HTMLButtonElement {
  const node = make('button', { text, className });
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

export function makeSvg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
): SVGElementTagNameMap[K] {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** 1:05, 1:02:05. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const seconds = Math.round(ms / 1000);
  return clock(seconds);
}

/** A playback position, rounded down: 0:00 until the first second has passed. */
export function formatPosition(ms: number): string {
  return clock(Math.floor(Math.max(0, ms) / 1000));
}

function clock(seconds: number): string {
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = String(seconds % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

export function formatTime(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(0)} kB`;
  if (bytes < 1_000_000_000) return `${(bytes / 1_000_000).toFixed(1)} MB`;
  return `${(bytes / 1_000_000_000).toFixed(2)} GB`;
}

/** Whether the reader asked for less motion: scrolling then jumps instead of gliding. */
export function reducedMotion(): boolean {
  return window.matchMedia('(prefers-reduced-motion: reduce)').matches;
}
