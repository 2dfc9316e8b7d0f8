"""Core: what every layer above shares, in seven rooms that import downwards only.

``interfaces`` (the data paths' shared interface) > ``clients`` > ``formats`` > ``settings`` >
``telemetry`` > ``runtime`` > ``base``; ``pyproject.toml`` holds the contract.
"""
