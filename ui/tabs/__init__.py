"""The app's tabs, one module each: components built by ``build``, events wired by ``wire``, handlers as methods
of a small class over ``context.AppContext`` and the typed ``session.Session`` (testable without a browser)."""
