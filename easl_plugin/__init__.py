"""easl_plugin package."""
