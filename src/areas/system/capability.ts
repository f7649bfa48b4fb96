// What an area tells `GET /api/v1/capabilities` about itself: its line of the features catalogue
// and the limits it enforces. Each area contributes its own, from the constants its rules use.

export interface Feature {
  name: string;
  description: string;
  [detail: string]: unknown;
}

export interface Capability {
  feature: Feature;
  /** Entries of the catalogue's `limits`. */
  limits?: Record<string, unknown>;
}
