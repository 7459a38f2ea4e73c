"""The app's tabs, one module each: its components (``build``), its events (``wire``) and their handlers.

A handler that needs only the typed ``session.Session`` (or the event) is a plain function; one that needs the
runtime is a method of a small class over ``context.AppContext`` (Gradio reads a bound method's name, signature,
type hints and generator-ness as it reads a function's). Either way it can be called, and tested, without a browser.
"""
