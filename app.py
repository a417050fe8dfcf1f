"""attnviz app entry point (placeholder until the app issue lands)."""

import streamlit as st

st.set_page_config(page_title="attnviz", layout="wide")
st.title("attnviz")
