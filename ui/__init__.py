"""The web app: pure rendering (render, export, safe), behaviour (services) and Gradio wiring (app)."""
