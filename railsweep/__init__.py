"""railsweep: did this decoding trick really restore my contaminated model's ability, question by question?"""

__version__ = "0.1.0"
