"""The alert engine: rules, detectors, the bridge-side service, webhooks and the cluster feed (docs/alerts.md)."""
