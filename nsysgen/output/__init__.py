"""Files: templates rendered to bytes, the manifest that records them, the atomic write."""
