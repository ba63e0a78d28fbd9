"""What passes between processes: the protocol's channel, tensors as raw bytes in files, and GPU memory shared
between the judge and the candidate's worker."""
