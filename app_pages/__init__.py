"""The app's pages (run by st.navigation in app.py) and `common`, the layer they share."""
