_instruments = ("litellm >= 1.70",)
