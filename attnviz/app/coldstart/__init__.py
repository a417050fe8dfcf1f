"""A cold server's start: the warm-up thread, the first map from numpy, the early fetch of
Streamlit's chart code, the frozen heap."""
