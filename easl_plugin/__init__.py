"""The Label Studio ML backend: ``easl ls`` (setup, status) and ``easl serve`` (webhooks, reconciliation, pushing
the next HITs); ``docs/ARCHITECTURE.md``, "easl_plugin/"."""
