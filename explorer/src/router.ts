// Navigation between views: the hash names the view; going to the hash already shown renders it again.
let render: () => Promise<void> = async () => {};

export function setRenderer(renderer: () => Promise<void>): void {
  render = renderer;
}

export function navigate(hash: string): void {
  if (location.hash === hash) void render();
  else location.hash = hash;
}
