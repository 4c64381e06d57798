"""Reading and fetching task data (text, rows, exemplars, leak splits, PQ, the data folder, ``railsweep data``)."""
