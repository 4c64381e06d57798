"""What a sweep is, checked before anything starts: the spec YAML as validated frozen dataclasses, the presets
(package data), a spec's paths resolved, a harness group's member specs, the command line's overrides."""
