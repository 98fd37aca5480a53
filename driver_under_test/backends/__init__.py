"""What runs a prepared model: the backends a device can be created with."""
