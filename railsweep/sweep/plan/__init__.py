"""What a sweep will do and what it costs, known before it starts (no torch, Ray or MLflow): the grid of
cells, the detectors' readout cells, the engine pool, the resource plan, the price and the throughputs it
reads."""
