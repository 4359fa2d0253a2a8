def _get_device_index(device, optional=False):
    return int(device)
