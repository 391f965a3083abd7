/**
 * The badge's options, their defaults and bounds (docs/api.md, "Badges"): shared by the badge
 * routes and the web front's embed builder, so the two cannot disagree. No Node built-ins here:
 * the web front bundles this module.
 */
export const BADGE_STYLES = ['flat', 'flat-square', 'for-the-badge'] as const;
export type BadgeStyle = (typeof BADGE_STYLES)[number];

/** Defaults of the badge options; white text on each colour has at least 4.5:1 contrast. */
export const BADGE_DEFAULTS = {
  label: 'minecraft',
  style: 'flat' as BadgeStyle,
  labelColor: '#555555',
  onlineColor: '#2e7d32',
  offlineColor: '#c62828',
};

/** Longest label accepted, in characters. */
export const MAX_BADGE_LABEL_LENGTH = 64;
