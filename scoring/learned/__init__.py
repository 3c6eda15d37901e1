"""A learned metric in the manner of HEAP (Mehri & Shwartz): preference pairs from human
judgments, a by-document split, ``"<instruction> <context> <answer>"`` inputs through a
pretrained backbone, and a scalar head trained with log(1 + exp(r_bad − r_good)).

Plain Python, no Django. :mod:`.pairs`, :mod:`.split` and :mod:`.inputs` need only the
standard library; :mod:`.backbone`, :mod:`.head`, :mod:`.train` and :mod:`.checkpoint`
import torch.
"""
