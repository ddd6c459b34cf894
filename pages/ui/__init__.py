"""Streamlit glue shared by app.py and the pages: sidebar controls, shared models, session state."""
