/** The part of render/ that loads @napi-rs/canvas and sharp; ./index.ts imports it on first use. */
export { renderBanner } from './banner.js';
export { defaultIconPng } from './default-icon.js';
export { renderIcon } from './icon.js';
export { renderMotdBanner } from './motd-banner.js';
