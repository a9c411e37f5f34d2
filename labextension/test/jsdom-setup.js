// What jsdom lacks and Lumino's modules use when they load (as JupyterLab's own test setup does).
if (typeof window !== 'undefined' && typeof window.DragEvent === 'undefined') {
  window.DragEvent = class DragEvent extends window.MouseEvent {};
  globalThis.DragEvent = window.DragEvent;
}
