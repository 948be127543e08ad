"""sealtop console: Textual screens and widgets on top of the Engine API."""
