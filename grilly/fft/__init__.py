"""The Array API fft extension."""
__all__: list = []
