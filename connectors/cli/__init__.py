"""The connector's own command-line verbs: verify, failover, failback, drill, translate, acls and audit.

``mirror-sink`` (``api.cli.main``) registers them beside the runtime's verbs (worker, standalone,
spark, passwd); they read connector configs with the plugin's config model, which nothing outside the
plugin imports.
"""
