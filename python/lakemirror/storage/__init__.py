"""Storage: where the landing zone and the warehouse are, and the one door to each."""
