"""label_config package."""
