"""Development tooling: generated docs and the generated CRD. Not part of the shipped package."""
