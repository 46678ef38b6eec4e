"""Claims with provenance, and the specific things they are about, from past abstracts.

Pure text processing, no model weights. Used by every generator here:

* :func:`split_sentences` / :func:`detex` — abstracts into clean sentences;
* :func:`extract_claims` — claim sentences (a result, a non-detection, a tension, a
  caveat) with provenance ``(paper id, sentence index)`` and cue flags;
* :func:`detect` — what a text is about: catalogued designations
  (:func:`backtest.text.objects.find_objects`), molecules (H2O, CO2, NH3, CH4...),
  instruments and missions (JWST/NIRSpec, HST/WFC3, THEMIS, MODIS...), methods
  (retrievals, cross-correlation, MHD simulations...), physical properties, and key
  quantities (a number with an uncertainty or a unit, tied to the property before it).

The lexicons are deliberately small and case-sensitive where the field writes names
that way; they favour precision over recall, like ``backtest.text.objects``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from backtest.core.records import CorpusRecord
from backtest.core.seal import sha256_json
from backtest.text.objects import find_objects

# --------------------------------------------------------------------------- text clean-up

# Greek letters and a few symbols keep their meaning as Unicode: "low-$\alpha$ stars" -> "low-α stars",
# "H$\alpha$" -> "Hα", "$5\sigma$" -> "5σ", "$\sigma_8$" -> "σ8" (not "low- stars", "H", "5", "8").
_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
_SYMBOLS = {"AA": "Å", "ell": "ℓ", "infty": "∞", "propto": "∝", "circ": "°", "deg": "°", "prime": "′"}
_NAMED_FUNCTIONS = ("log", "ln", "exp", "sin", "cos", "tan")  # \log M -> "log M", not " M"


def _fraction(match: re.Match[str]) -> str:
    """``\\frac{2}{3}`` or ``\\frac23`` -> "2/3" (not "23")."""
    top, bottom = (match.group(1), match.group(2)) if match.group(1) is not None else (match.group(3), match.group(4))
    return f"{top}/{bottom}"


_LATEX_SUBS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\$?_\{?(\d)\}?\$?"), r"\1"),  # H$_2$O, H_{2}O -> H2O
    (re.compile(r"\\(?:pm|mp)"), "±"),
    (re.compile(r"\\(?:simeq|approx|sim)(?![A-Za-z])"), "~"),  # simeq before sim: not "~eq"
    (re.compile(r"\\(" + "|".join(_GREEK) + r")(?![A-Za-z])"), lambda m: _GREEK[m.group(1)]),
    (re.compile(r"\\(" + "|".join(_SYMBOLS) + r")(?![A-Za-z])"), lambda m: _SYMBOLS[m.group(1)]),
    (re.compile(r"\\(" + "|".join(_NAMED_FUNCTIONS) + r")(?![A-Za-z])"), r"\1 "),
    (re.compile(r"\\(?:lesssim|lt|leq|le)(?![A-Za-z])"), "<"),  # "\lesssim40": not "40"
    (re.compile(r"\\(?:gtrsim|gt|geq|ge)(?![A-Za-z])"), ">"),
    (re.compile(r"\\r\{A\}"), "Å"),
    (re.compile(r"\\[dt]?frac\s*\{([^{}]{1,20})\}\s*\{([^{}]{1,20})\}|\\[dt]?frac\s*(\d)(\d)"), _fraction),
    # a power of ten keeps its caret ("E > 10^18 eV", not "1018 eV")
    (
        re.compile(r"(?<![\d.])10\^\{?([-+\u2212]?\d+(?:\.\d+)?)\}?"),
        lambda m: "10^" + m.group(1).replace("\u2212", "-"),
    ),
    (re.compile(r"\\(?:times)"), "x"),
    (re.compile(r"\\odot"), "sun"),
    (re.compile(r"\\(?:rm|mathrm|text|textrm|it|bf|mathbf|emph)\b"), ""),
    (re.compile(r"\\[A-Za-z]+"), ""),
    # powers of ten and of a Greek symbol keep their caret ("10^-3", "~ω^-1"); elsewhere "s$^{-1}$" -> "s-1"
    (re.compile(r"[${}\\]|(?<![α-ωΑ-Ω])(?<![^\d.]10)(?<!^10)\^"), ""),
]
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def detex_fingerprint() -> str:
    """sha256 of :func:`detex`'s rules and tables: caches of text cleaned by it (the contamination probe's term
    index) key on it, so a change to the clean-up rebuilds them."""
    rules = [[p.pattern, r if isinstance(r, str) else "table"] for p, r in _LATEX_SUBS]
    return sha256_json([rules, _GREEK, _SYMBOLS, list(_NAMED_FUNCTIONS)])


def detex(text: str) -> str:
    """Strip the LaTeX of arXiv abstracts to plain text (``H$_2$O`` -> ``H2O``, ``\\pm`` -> ``±``)."""
    text = text.translate(_SUBSCRIPTS)
    for pattern, repl in _LATEX_SUBS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


_ABBREVIATIONS = (
    "e.g.",
    "i.e.",
    "et al.",
    "cf.",
    "approx.",
    "Fig.",
    "Figs.",
    "vs.",
    "ca.",
    "resp.",
    "Eq.",
    "Ref.",
    "Sect.",
    "No.",
    "al.",
    "St.",
    "Dr.",
    "Prof.",
    "U.S.",
)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])")


def split_sentences(text: str) -> list[str]:
    """Split an abstract into sentences, keeping abbreviations and decimals intact."""
    protected = text
    for abbr in _ABBREVIATIONS:
        protected = protected.replace(abbr, abbr.replace(".", "\x00"))
    protected = re.sub(r"(?<=\b[A-Z])\.(?=\s?[A-Z]\.)", "\x00", protected)  # initials "J. R."
    return [s.replace("\x00", ".").strip() for s in _SPLIT.split(protected) if s.strip()]


# --------------------------------------------------------------------------- lexicons


MOLECULES = {
    "H2O": ["H2O", "water vapour", "water vapor"],
    "CO2": ["CO2", "carbon dioxide"],
    "CO": ["CO", "carbon monoxide"],
    "CH4": ["CH4", "methane"],
    "NH3": ["NH3", "ammonia"],
    "SO2": ["SO2", "sulfur dioxide", "sulphur dioxide"],
    "H2S": ["H2S"],
    "HCN": ["HCN"],
    "TiO": ["TiO"],
    "VO": ["VO"],
    "FeH": ["FeH"],
    "C2H2": ["C2H2", "acetylene"],
    "PH3": ["PH3", "phosphine"],
    "O3": ["O3", "ozone"],
    "O2": ["O2"],
    "N2O": ["N2O"],
    "NO2": ["NO2"],
    "OH": ["OH"],
    "HDO": ["HDO"],
    "SiO": ["SiO"],
    "HCO+": ["HCO+"],
    "N2H+": ["N2H+"],
    "CH3OH": ["CH3OH", "methanol"],
    "H2CO": ["H2CO", "formaldehyde"],
    "DMS": ["DMS", "dimethyl sulfide"],
    "He": ["metastable helium", "He I"],
    "Na": ["sodium"],
    "K": ["potassium"],
    "Fe": ["Fe I", "Fe II"],
    "PAH": ["PAH", "PAHs"],
    "aerosol": ["aerosol", "aerosols"],
}

INSTRUMENTS = {
    # astronomy
    "JWST": ["JWST", "James Webb Space Telescope", "Webb"],
    "NIRSpec": ["NIRSpec"],
    "NIRISS": ["NIRISS"],
    "NIRCam": ["NIRCam"],
    "MIRI": ["MIRI"],
    "HST": ["HST", "Hubble Space Telescope"],
    "WFC3": ["WFC3"],
    "STIS": ["STIS"],
    "Spitzer": ["Spitzer"],
    "TESS": ["TESS"],
    "Kepler": ["Kepler"],
    "CHEOPS": ["CHEOPS"],
    "Gaia": ["Gaia"],
    "Euclid": ["Euclid"],
    "Rubin/LSST": ["LSST", "Rubin Observatory", "Vera C. Rubin"],
    "ZTF": ["ZTF"],
    "SDSS": ["SDSS"],
    "DESI": ["DESI"],
    "ALMA": ["ALMA"],
    "VLA": ["VLA", "JVLA"],
    "VLT": ["VLT"],
    "VLTI/GRAVITY": ["GRAVITY", "VLTI"],
    "ESPRESSO": ["ESPRESSO"],
    "CRIRES+": ["CRIRES+", "CRIRES"],
    "HARPS": ["HARPS", "HARPS-N"],
    "CARMENES": ["CARMENES"],
    "IGRINS": ["IGRINS"],
    "MAROON-X": ["MAROON-X"],
    "Keck": ["Keck", "KPF", "HIRES"],
    "Subaru": ["Subaru", "HSC"],
    "SPHERE": ["SPHERE"],
    "MUSE": ["MUSE"],
    "X-shooter": ["X-shooter", "X-Shooter"],
    "Chandra": ["Chandra"],
    "XMM-Newton": ["XMM-Newton", "XMM"],
    "NuSTAR": ["NuSTAR"],
    "Swift": ["Swift"],
    "Fermi": ["Fermi", "Fermi-LAT"],
    "NICER": ["NICER"],
    "IXPE": ["IXPE"],
    "XRISM": ["XRISM"],
    "eROSITA": ["eROSITA"],
    "Einstein Probe": ["Einstein Probe"],
    "IceCube": ["IceCube"],
    "LIGO/Virgo/KAGRA": ["LIGO", "Virgo", "KAGRA", "LVK"],
    "LISA": ["LISA"],
    "EHT": ["EHT", "Event Horizon Telescope"],
    "LOFAR": ["LOFAR"],
    "MeerKAT": ["MeerKAT"],
    "ASKAP": ["ASKAP"],
    "MWA": ["MWA"],
    "CHIME": ["CHIME"],
    "FAST": ["FAST"],
    "Planck": ["Planck"],
    "ACT": ["ACT", "Atacama Cosmology Telescope"],
    "SPT": ["SPT", "South Pole Telescope"],
    "Herschel": ["Herschel"],
    "WISE": ["WISE", "NEOWISE"],
    "GALEX": ["GALEX"],
    "LAMOST": ["LAMOST"],
    "APOGEE": ["APOGEE"],
    "GALAH": ["GALAH"],
    "DES": ["Dark Energy Survey"],
    "KiDS": ["KiDS"],
    "SPHEREx": ["SPHEREx"],
    "HETDEX": ["HETDEX"],
    "NANOGrav": ["NANOGrav", "PTA", "EPTA", "IPTA"],
    "HESS/MAGIC/VERITAS": ["H.E.S.S.", "MAGIC", "VERITAS", "LHAASO", "HAWC"],
    # heliophysics and space physics
    "Parker Solar Probe": ["Parker Solar Probe", "PSP"],
    "Solar Orbiter": ["Solar Orbiter"],
    "SDO": ["SDO", "AIA", "HMI"],
    "SOHO": ["SOHO", "LASCO"],
    "STEREO": ["STEREO"],
    "DKIST": ["DKIST"],
    "IRIS": ["IRIS"],
    "Hinode": ["Hinode"],
    "Juno": ["Juno"],
    "Cassini": ["Cassini"],
    "New Horizons": ["New Horizons"],
    "MAVEN": ["MAVEN"],
    "Rosetta": ["Rosetta"],
    "Voyager": ["Voyager"],
    "Ulysses": ["Ulysses"],
    "ACE": ["ACE"],
    "Wind": ["Wind spacecraft"],
    "THEMIS": ["THEMIS", "ARTEMIS"],
    "Cluster": ["Cluster spacecraft", "Cluster mission"],
    "MMS": ["MMS", "Magnetospheric Multiscale"],
    "Van Allen Probes": ["Van Allen Probes", "RBSP"],
    "DMSP": ["DMSP"],
    "GOES": ["GOES"],
    "POES": ["POES", "NOAA-POES"],
    "Swarm": ["Swarm"],
    "CHAMP": ["CHAMP"],
    "GRACE": ["GRACE", "GRACE-FO"],
    "GOCE": ["GOCE"],
    "COSMIC": ["COSMIC"],
    "TIMED": ["TIMED", "GUVI", "SABER"],
    "SuperDARN": ["SuperDARN"],
    "EISCAT": ["EISCAT"],
    "IMAGE": ["IMAGE satellite"],
    "GNSS/GPS": ["GNSS", "GPS"],
    "Arase": ["Arase", "ERG"],
    "Venus Express": ["Venus Express"],
    "Mars Express": ["Mars Express"],
    "MESSENGER": ["MESSENGER"],
    "Wind/ACE": ["OMNI"],
    # Earth observation, models and reanalyses
    "MODIS": ["MODIS"],
    "CALIPSO": ["CALIPSO", "CALIOP"],
    "CloudSat": ["CloudSat"],
    "AIRS": ["AIRS"],
    "MLS": ["MLS"],
    "OMI": ["OMI"],
    "TROPOMI": ["TROPOMI"],
    "IASI": ["IASI"],
    "OCO-2": ["OCO-2"],
    "Sentinel": ["Sentinel-1", "Sentinel-2", "Sentinel-5P"],
    "Landsat": ["Landsat"],
    "InSAR": ["InSAR"],
    "ERA-Interim": ["ERA-Interim"],
    "ERA5": ["ERA5"],
    "MERRA-2": ["MERRA-2", "MERRA"],
    "NCEP": ["NCEP"],
    "CMIP5": ["CMIP5"],
    "CMIP6": ["CMIP6"],
    "WRF": ["WRF"],
    "WACCM": ["WACCM"],
    "CESM": ["CESM"],
    "ECMWF": ["ECMWF"],
    "IRI": ["IRI model"],
    "AERONET": ["AERONET"],
    "USArray": ["USArray"],
    "IceSat": ["ICESat", "ICESat-2"],
    "TRMM": ["TRMM", "GPM"],
    "SMOS": ["SMOS", "SMAP"],
}

METHODS = {
    "atmospheric retrieval": [
        "atmospheric retrieval",
        "free retrieval",
        "retrievals",
        "retrieval analysis",
        "retrieval framework",
    ],
    "cross-correlation spectroscopy": ["cross-correlation", "cross correlation"],
    "high-resolution spectroscopy": ["high-resolution spectroscopy", "high resolution spectroscopy", "high-dispersion"],
    "transmission spectroscopy": ["transmission spectroscopy", "transmission spectrum", "transmission spectra"],
    "emission spectroscopy": ["emission spectroscopy", "emission spectrum", "secondary eclipse", "dayside spectrum"],
    "phase-curve analysis": ["phase curve", "phase curves"],
    "radial velocities": ["radial velocity", "radial velocities", "radial-velocity"],
    "transit timing": ["transit timing", "TTV", "TTVs"],
    "astrometry": ["astrometry", "astrometric"],
    "asteroseismology": ["asteroseismology", "asteroseismic"],
    "gyrochronology": ["gyrochronology"],
    "microlensing": ["microlensing"],
    "direct imaging": ["direct imaging", "high-contrast imaging"],
    "interferometry": ["interferometry", "interferometric"],
    "weak lensing": ["weak lensing", "cosmic shear"],
    "strong lensing": ["strong lensing", "strong gravitational lensing"],
    "SED fitting": ["SED fitting", "spectral energy distribution"],
    "MCMC sampling": ["MCMC", "Markov chain Monte Carlo"],
    "nested sampling": ["nested sampling"],
    "machine learning": ["machine learning", "neural network", "neural networks", "deep learning", "random forest"],
    "N-body simulations": ["N-body"],
    "hydrodynamical simulations": [
        "hydrodynamical simulation",
        "hydrodynamic simulation",
        "hydrodynamical simulations",
        "cosmological simulations",
    ],
    "MHD simulations": [
        "MHD simulation",
        "MHD simulations",
        "magnetohydrodynamic simulation",
        "magnetohydrodynamic simulations",
    ],
    "particle-in-cell simulations": ["particle-in-cell", "PIC simulation", "PIC simulations"],
    "hybrid simulations": ["hybrid simulation", "hybrid simulations"],
    "general circulation models": ["general circulation model", "GCM", "GCMs"],
    "radiative transfer modelling": ["radiative transfer"],
    "photochemical modelling": ["photochemical model", "photochemistry"],
    "population synthesis": ["population synthesis"],
    "data assimilation": ["data assimilation"],
    "ensemble forecasting": ["ensemble forecast", "ensemble prediction"],
    "reanalysis": ["reanalysis"],
    "Gaussian processes": ["Gaussian process", "Gaussian processes"],
    "seismic tomography": ["tomography", "tomographic"],
    "inversion": ["inversion", "inverse modelling", "inverse modeling"],
    "spectropolarimetry": ["spectropolarimetry", "Zeeman Doppler imaging"],
    "stacking analysis": ["stacking analysis", "stacked"],
    "photometric redshifts": ["photometric redshift", "photometric redshifts"],
    "kinematic modelling": ["kinematic model", "rotation curve", "rotation curves"],
}

PROPERTIES = {
    "temperature": ["temperature", "temperatures"],
    "mass": ["mass", "masses"],
    "radius": ["radius", "radii"],
    "density": ["density", "densities"],
    "metallicity": ["metallicity", "metallicities"],
    "abundance": ["abundance", "abundances"],
    "C/O ratio": ["C/O"],
    "albedo": ["albedo"],
    "obliquity": ["obliquity", "spin-orbit", "Rossiter-McLaughlin"],
    "eccentricity": ["eccentricity", "eccentricities"],
    "inclination": ["inclination"],
    "age": ["age", "ages"],
    "distance": ["distance", "distances"],
    "luminosity": ["luminosity", "luminosities"],
    "rotation period": ["rotation period", "rotational period"],
    "orbital period": ["orbital period"],
    "spin": ["spin"],
    "magnetic field": ["magnetic field", "magnetic fields", "field strength"],
    "wind speed": ["wind speed", "winds", "wind"],
    "velocity": ["velocity", "velocities"],
    "redshift": ["redshift"],
    "star formation rate": ["star formation rate", "star-formation rate", "SFR"],
    "mass-loss rate": ["mass-loss rate", "mass loss rate", "escape rate", "atmospheric escape"],
    "Hubble constant": ["Hubble constant", "H0"],
    "S8": ["S8"],
    "sigma8": ["sigma8", "σ8"],
    "dust mass": ["dust mass"],
    "accretion rate": ["accretion rate"],
    "column density": ["column density"],
    "optical depth": ["optical depth"],
    "electron density": ["electron density", "plasma density"],
    "total electron content": ["total electron content", "TEC"],
    "geomagnetic index": ["Dst", "Kp", "AE index", "SYM-H"],
    "precipitation": ["precipitation", "rainfall"],
    "sea surface temperature": ["sea surface temperature", "SST"],
    "aerosol optical depth": ["aerosol optical depth", "AOD"],
    "cloud cover": ["cloud cover", "cloud fraction"],
    "cloud properties": ["clouds"],
    "haze": ["haze", "hazes"],
    "water content": ["water content", "water mass fraction"],
    "black hole mass": ["black hole mass"],
    "initial mass function": ["initial mass function", "IMF"],
    "dark matter fraction": ["dark matter fraction"],
    "stellar mass": ["stellar mass", "stellar masses"],
    "size": ["size", "sizes"],
    "flux": ["flux", "fluxes"],
    "energy spectrum": ["energy spectrum", "spectral index"],
    "reconnection rate": ["reconnection rate"],
    "particle acceleration": ["particle acceleration", "electron acceleration"],
    "occurrence rate": ["occurrence rate"],
}

# Named phenomena and regions (space, atmospheric, geo- and astrophysics): specific subjects where
# a corpus has few catalogued designations.
PHENOMENA = {
    "magnetosphere": ["magnetosphere", "magnetospheric"],
    "ionosphere": ["ionosphere", "ionospheric"],
    "thermosphere": ["thermosphere", "thermospheric"],
    "plasmasphere": ["plasmasphere", "plasmaspheric"],
    "radiation belts": ["radiation belt", "radiation belts", "Van Allen belts"],
    "magnetopause": ["magnetopause"],
    "bow shock": ["bow shock", "bow shocks"],
    "magnetotail": ["magnetotail"],
    "ring current": ["ring current"],
    "solar wind": ["solar wind"],
    "coronal mass ejections": ["coronal mass ejection", "coronal mass ejections", "CME", "CMEs"],
    "solar flares": ["solar flare", "solar flares"],
    "substorms": ["substorm", "substorms"],
    "geomagnetic storms": ["geomagnetic storm", "geomagnetic storms", "magnetic storm", "magnetic storms"],
    "magnetic reconnection": ["magnetic reconnection", "reconnection"],
    "Alfven waves": ["Alfven wave", "Alfven waves", "Alfvén waves", "Alfvénic"],
    "whistler-mode chorus": ["chorus", "whistler", "whistler-mode", "whistlers"],
    "aurora": ["aurora", "auroral", "aurorae"],
    "cosmic rays": ["cosmic ray", "cosmic rays"],
    "solar energetic particles": ["solar energetic particle", "solar energetic particles", "SEP", "SEPs"],
    "heliosphere": ["heliosphere", "heliospheric", "heliopause"],
    "corona": ["solar corona", "coronal heating"],
    "sunspots": ["sunspot", "sunspots", "solar cycle"],
    "turbulence": ["turbulence", "turbulent cascade"],
    "sea ice": ["sea ice", "Arctic sea ice"],
    "ENSO": ["ENSO", "El Nino", "El Niño", "La Nina", "La Niña"],
    "monsoon": ["monsoon", "monsoons"],
    "jet stream": ["jet stream"],
    "stratosphere": ["stratosphere", "stratospheric"],
    "polar vortex": ["polar vortex"],
    "sudden stratospheric warmings": ["sudden stratospheric warming", "sudden stratospheric warmings", "SSW"],
    "QBO": ["QBO", "quasi-biennial oscillation"],
    "MJO": ["MJO", "Madden-Julian"],
    "tropical cyclones": ["tropical cyclone", "tropical cyclones", "hurricane", "hurricanes", "typhoon", "typhoons"],
    "earthquakes": ["earthquake", "earthquakes", "seismicity"],
    "mantle": ["mantle convection", "upper mantle", "lower mantle"],
    "geodynamo": ["geodynamo", "outer core"],
    "ice sheets": ["ice sheet", "ice sheets", "Antarctic ice", "Greenland ice"],
    "permafrost": ["permafrost"],
    "lightning": ["lightning", "sprites", "terrestrial gamma-ray flashes"],
    "gravity waves": ["gravity wave", "gravity waves"],
    "planetary boundary layer": ["boundary layer"],
    "Martian atmosphere": ["Martian atmosphere", "atmosphere of Mars"],
    "Venus atmosphere": ["Venus atmosphere", "atmosphere of Venus"],
    "Jovian magnetosphere": ["Jovian magnetosphere", "Jupiter's magnetosphere"],
    "Titan": ["Titan"],
    "Enceladus": ["Enceladus"],
}

# Terms that name a systematic or an analysis choice (for methodological challenges).
SYSTEMATICS = {
    "stellar contamination": [
        "stellar contamination",
        "unocculted",
        "starspot",
        "starspots",
        "stellar activity",
        "faculae",
    ],
    "instrument systematics": [
        "instrumental systematics",
        "instrument systematics",
        "detector systematics",
        "systematics",
    ],
    "retrieval assumptions": ["retrieval assumptions"],
    "model assumptions": ["model assumptions", "modelling assumptions", "modeling assumptions"],
    "prior choices": ["prior", "priors"],
    "calibration": ["calibration", "flux calibration"],
    "degeneracies": ["degeneracy", "degeneracies", "degenerate"],
    "selection effects": ["selection effect", "selection effects", "selection bias", "Malmquist"],
    "dust extinction": ["extinction", "dust attenuation"],
    "contamination": ["contamination", "contaminated", "blending", "blended"],
    "terminator heterogeneity": [
        "limb asymmetry",
        "terminator heterogeneity",
        "morning and evening limbs",
        "morning-evening",
    ],
    "photometric uncertainties": ["photometric uncertainties"],
    "model dependence": ["model-dependent", "model dependent", "model dependence"],
}


_LEXICONS = {
    "molecule": MOLECULES,
    "instrument": INSTRUMENTS,
    "method": METHODS,
    "property": PROPERTIES,
    "systematic": SYSTEMATICS,
    "phenomenon": PHENOMENA,
}
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+\-/.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_MAX_GRAM = 4


@lru_cache(maxsize=1)
def _alias_tables() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]], frozenset[str]]:
    """(exact-case table, lower-case table) mapping an alias to (kind, canonical name).

    Acronyms and formulas (any capital after the first letter, or a digit) match only
    as written; word-like aliases also match in lower case ("Transmission spectra")."""
    exact: dict[str, tuple[str, str]] = {}
    folded: dict[str, tuple[str, str]] = {}
    for kind, table in _LEXICONS.items():
        for canon, aliases in table.items():
            for alias in aliases:
                exact.setdefault(alias, (kind, canon))
                if len(alias) >= 4 and not re.search(r"[A-Z0-9+]", alias[1:]):
                    folded.setdefault(alias.lower(), (kind, canon))
    starts = frozenset(a.split(" ")[0] for a in exact) | frozenset(a.split(" ")[0] for a in folded)
    return exact, folded, starts


def scan_terms(text: str) -> dict[str, list[str]]:
    """All lexicon terms in ``text`` in one pass: ``{kind: [canonical names, first appearance order]}``.

    Tokens are matched as n-grams (longest first, up to four tokens) against the alias
    tables, which is linear in the text and independent of the lexicon size."""
    exact, folded, starts = _alias_tables()
    tokens = [t.rstrip(".") or t for t in _TOKEN.findall(text)]
    found: dict[str, list[str]] = {kind: [] for kind in _LEXICONS}
    i = 0
    while i < len(tokens):
        step = 1
        if tokens[i] not in starts and tokens[i].lower() not in starts:
            i += 1
            continue
        for n in range(min(_MAX_GRAM, len(tokens) - i), 0, -1):
            gram = " ".join(tokens[i : i + n])
            hit = exact.get(gram) or folded.get(gram.lower())
            if hit:
                kind, canon = hit
                if canon not in found[kind]:
                    found[kind].append(canon)
                step = n
                break
        i += step
    return found


def find_terms(text: str, kind: str) -> list[str]:
    """Canonical names of one lexicon's terms (molecule, instrument, method, property, systematic) in ``text``."""
    return scan_terms(text)[kind]


def _to_float(text: str) -> float:
    """A number as :data:`_NUMBER` matches it: "3.2", "3x10^-3" (or the older "3x10-3"), "10^18"."""
    text = re.sub(r"\s?[x×]\s?10\^?(-?\d+)", r"e\1", text)
    return float(re.sub(r"^([-+]?)10\^(-?\d+)$", r"\g<1>1e\2", text))


_NUMBER = r"[-+]?(?:10\^-?\d+|\d+(?:\.\d+)?(?:\s?[x×]\s?10\^?-?\d+)?)"
_ERR = r"\d+(?:\.\d+)?"
_QUANTITY = re.compile(
    r"(?P<value>" + _NUMBER + r")\s?(?:(?:±|\+/-)\s?(?P<err>" + _ERR + r")"
    r"|\+(?P<up>" + _ERR + r")_?\s?-(?P<lo>" + _ERR + r"))?\s?"
    r"(?P<unit>km s-1 Mpc-1|km/s/Mpc|K|km/s|km s-1|m/s|ms-1|Msun|M_sun|Mjup|MJ|Rjup|RJ|Mearth|Rearth|M_J|R_J|"
    r"kpc|Mpc|pc|au|AU|Gyr|Myr|yr|days?|hr|hours|"
    r"nT|G|kG|keV|MeV|GeV|TeV|eV|erg|dex|ppm|per cent|%|km|cm-3|mag)?(?![A-Za-z])"
)
# A value that is a bound, a rough figure or one end of a range is not a determination.
_BOUND_BEFORE = re.compile(
    r"(?:<|>|≲|≳|≤|≥|~|\bless than|\bmore than|\bgreater than|\bup to|\bat least|\bat most|\babove|\bbelow|"
    r"\bexceed\w*|\bover|\bunder|\babout|\bapproximately|\baround|\bbetween|\bfrom|\bwithin|\bnearly|\balmost|"
    r"\d\s?(?:-|–|to|and))\s*$",
    re.I,
)
_UNIT_ALIASES = {
    "km s-1 Mpc-1": "km/s/Mpc",
    "km s-1": "km/s",
    "ms-1": "m/s",
    "M_sun": "Msun",
    "M_J": "Mjup",
    "MJ": "Mjup",
    "R_J": "Rjup",
    "RJ": "Rjup",
    "AU": "au",
    "per cent": "%",
    "day": "days",
    "hr": "hours",
}


_MAX_TIE_GAP = 30


def _tied(before: str, prop: str) -> bool:
    """True when the property's last mention ends at most 30 characters before the value, with no other
    number in between ("H0 = 73", "a temperature of 1500 K"; not "H0 _ de gives = -0.4"), and it is not
    a derived quantity ("f sigma8" is a growth rate, not sigma8)."""
    aliases = sorted(PROPERTIES[prop], key=len, reverse=True)
    last = None
    for match in re.finditer(
        r"(?<![A-Za-z])(?:" + "|".join(re.escape(a) for a in aliases) + r")(?![A-Za-z])", before, re.I
    ):
        last = match
    if last is None:
        return False
    alias, lowered = last.group(0).lower(), {a.lower() for a in PROPERTIES[prop]}
    if alias != PROPERTIES[prop][0].lower() and (alias.endswith(("es", "ii")) or alias[:-1] in lowered):
        return False  # a plural ("masses of 137 and 103 Msun"): one of several values, not one determination
    gap = before[last.end() :]
    if len(gap) > _MAX_TIE_GAP or re.search(r"\d", gap) or re.search(r"[_^]", gap):
        return False
    return not re.search(r"\bf\s?$", before[: last.start()])


def find_quantities(text: str) -> list[dict]:
    """Key quantities: a number with an uncertainty and/or a unit, tied to the property named
    within the 60 characters before it (``{"property", "value", "err", "unit", "text", "bound"}``).

    ``err`` is the larger side of an asymmetric uncertainty (``137+22_-17`` -> 22); ``unit`` is
    normalised (``km s-1`` -> ``km/s``); ``bound`` is true for upper or lower limits, rough
    figures ("~", "about") and ends of ranges ("10-100"), which are not determinations."""
    found = []
    for match in _QUANTITY.finditer(text):
        err_text = match.group("err") or (
            str(max(float(match.group("up")), float(match.group("lo")))) if match.group("up") else None
        )
        if not (err_text or match.group("unit")):
            continue
        before = text[max(0, match.start() - 60) : match.start()]
        if before and (before[-1].isalnum() or before[-1] in "_.,/^"):
            continue  # the tail of a designation or a word ("GW231123", "M_BH-1")
        props = find_terms(before, "property")
        if not props or not _tied(before, props[-1]):
            continue
        try:
            value = _to_float(match.group("value"))
        except ValueError:
            continue
        unit = match.group("unit") or ""
        norm_unit = _UNIT_ALIASES.get(unit, unit)
        if match.group("up"):
            shown = f"{match.group('value')} (+{match.group('up')}/-{match.group('lo')})"
        elif err_text:
            shown = f"{match.group('value')} ± {err_text}"
        else:
            shown = match.group("value")
        found.append(
            {
                "property": props[-1],
                "value": value,
                "err": float(err_text) if err_text else None,
                "unit": norm_unit,
                "text": f"{shown} {norm_unit}".strip(),
                "bound": bool(_BOUND_BEFORE.search(before[-25:]))
                or match.group("value").startswith("-")
                and bool(re.search(r"\d\s?$", before)),
            }
        )
    return found


# Features whose presence a claim can assert or deny: the molecules, plus a few observables.
FEATURES = {
    **{m: aliases for m, aliases in MOLECULES.items() if m not in ("aerosol",)},
    "DMS": ["DMS", "dimethyl sulfide", "dimethyl sulphide"],
    "radio emission": ["radio emission"],
    "X-ray emission": ["X-ray emission"],
    "gamma-ray emission": ["gamma-ray emission"],
    "pulsations": ["pulsations"],
    "a periodic signal": ["periodicity", "periodic signal", "periodic modulation"],
    "quasi-periodic oscillations": ["QPO", "QPOs", "quasi-periodic oscillation", "quasi-periodic oscillations"],
    "an atmosphere": ["an atmosphere", "a thick atmosphere", "a secondary atmosphere"],
    "an exomoon": ["exomoon", "an exomoon"],
    "a companion": ["a companion", "a binary companion", "a planetary companion"],
    "lithium": ["lithium"],
    "neutrino emission": ["neutrino emission"],
}
_NEG_STANCE = (
    r"(?:no (?:significant |clear |convincing |statistically significant |strong |robust )?"
    r"(?:evidence|detection|sign|signature|indication|trace)s? (?:of|for)|non-?detections? of|"
    r"(?:do|does|did|could|can) not (?:detect|find|see|confirm|support)|not (?:detected|found|observed|seen|confirmed)|"
    r"upper limits? (?:on|to|of|for)|absence of|lack of|rules? out|ruled out|undetected)"
)
_POS_STANCE = (
    r"(?:detect(?:s|ed)?|detections? of|evidence (?:for|of)|identif(?:y|ies|ied|ication of)|presence of|"
    r"signatures? of|confirm(?:s|ed)?(?: the)?(?: presence of| detection of)?|discover(?:y of|s|ed))"
)


@lru_cache(maxsize=1)
def _stance_patterns() -> list[tuple[str, re.Pattern, re.Pattern, re.Pattern]]:
    out = []
    for feature, aliases in FEATURES.items():
        alias = "(?:" + "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True)) + ")"
        name = r"(?<![\w/+])" + alias + r"(?![\w/+])"
        neg = re.compile(
            _NEG_STANCE + r"[^.;:,]{0,15}?" + name + "|" + name + r"[^.;:]{0,30}?\b(?:is|was|were|are|remains?) "
            r"(?:not|un)\s?(?:detected|seen|found|observed)",
            re.I,
        )
        pos = re.compile(
            r"\b" + _POS_STANCE + r"\b[^.;:,]{0,15}?" + name + "|" + name + r"[^.;:]{0,30}?\b(?:is|was|were|are) "
            r"(?:clearly |robustly |securely |also )?(?:detected|identified|seen|confirmed)",
            re.I,
        )
        out.append((feature, re.compile(name), neg, pos))
    return out


def find_stances(text: str) -> list[tuple[str, str]]:
    """``[(feature, "detected" | "not detected")]``: the features (:data:`FEATURES`) a sentence
    explicitly says were detected, or explicitly says were not detected (the negation bound to the
    feature within a few words). A sentence that denies anything asserts no detection; tentative,
    marginal or hinted detections are not stances."""
    found = []
    hedged = bool(
        re.search(
            r"\b(?:tentative\w*|marginal\w*|hint\w*|possibl\w*|may|might|could|candidate|interchangeable|degenera\w*|ambiguous)\b",
            text,
            re.I,
        )
    )
    denies = bool(re.search(_NEG_STANCE, text, re.I))
    for feature, name, neg, pos in _stance_patterns():
        if not name.search(text):
            continue
        if neg.search(text):
            found.append((feature, "not detected"))
        elif pos.search(text) and not denies and not hedged:
            found.append((feature, "detected"))
    return found


@dataclass(frozen=True)
class Detected:
    """What a text is about."""

    objects: tuple[str, ...] = ()
    molecules: tuple[str, ...] = ()
    instruments: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    systematics: tuple[str, ...] = ()
    phenomena: tuple[str, ...] = ()


def detect(text: str, objects: bool = True) -> Detected:
    """Catalogued objects, molecules, instruments, methods, properties and systematics named in
    ``text`` (plain text: run :func:`detex` first). ``objects=False`` skips the designation
    detector, the slow part, for texts known to name none."""
    terms = scan_terms(text)
    found = tuple(o for o in find_objects(text) if _plausible_object(o)) if objects else ()
    return Detected(
        objects=found,
        molecules=tuple(terms["molecule"]),
        instruments=tuple(terms["instrument"]),
        methods=tuple(terms["method"]),
        properties=tuple(terms["property"]),
        systematics=tuple(terms["systematic"]),
        phenomena=tuple(terms["phenomenon"]),
    )


def _plausible_object(name: str) -> bool:
    """Drop designations that are usually something else in abstracts: Messier numbers under 10
    ("M1" flare classes, "M5" dwarfs) and Bayer-like matches on a bare digit ("1 Oct")."""
    if re.fullmatch(r"M[1-9]", name):
        return False
    if re.fullmatch(r"\d \w{3}", name):
        return False
    return True


# --------------------------------------------------------------------------- claims

RESULT_CUE = re.compile(
    r"\b(?:we|our (?:results?|analysis|observations|measurements|data|models?|simulations?))\s+"
    r"(?:also\s+|further\s+|here\s+)?"
    r"(?:find|found|detect|detected|measure|measured|report|reported|show|showed|shows|demonstrate|confirm|confirmed|"
    r"derive|derived|infer|inferred|constrain|constrained|determine|determined|obtain|obtained|identify|identified|reveal|"
    r"revealed|reveals|indicate|indicates|suggest|suggests|imply|implies|estimate|estimated|conclude|observe|observed)\b"
    r"|\b(?:is|are|was|were|remains?)\s+(?:(?:fully|broadly|largely|not)\s+)?(?:consistent|inconsistent|compatible)\s+with\b"
    r"|\b(?:results?|data|observations|measurements|spectra|analysis)\s+(?:reveal|reveals|indicate|indicates|suggest|suggests|show|shows|imply|implies|favou?r|favou?rs)\b",
)
NEGATIVE_CUE = re.compile(
    r"\b(?:no (?:evidence|significant|detection|sign)|not (?:detected|detect|find|found|observed|required|supported)|"
    r"non-?detections?|"
    r"upper limits?|rules? out|ruled out|absence of|lack of|disfavou?r(?:s|ed)?|"
    r"cannot be explained|featureless|flat spectrum)\b",
)
TENSION_CUE = re.compile(
    r"\b(?:in tension|tension (?:with|between)|discrepan\w*|disagree\w*|inconsisten\w*|contradict\w*|"
    r"conflict\w*|at odds|"
    r"in contrast (?:to|with)|contrary to|differs? (?:significantly )?from|challeng\w*|puzzl\w*|unexpected\w*)\b",
)
METHOD_CUE = re.compile(
    r"\b(?:systematic\w*|bias(?:ed|es)?|contaminat\w*|degenera\w*|model[- ]dependen\w*|assum\w*|calibrat\w*|"
    r"artefact\w*|"
    r"artifact\w*|spurious|instrumental|overestimat\w*|underestimat\w*|sensitive to|"
    r"depends? (?:strongly )?on|robust\w*)\b",
)
QUALIFY_CUE = re.compile(
    r"\b(?:however|only (?:if|when|for|under|in)|limited to|caution\w*|cannot (?:exclude|rule out)|alternativ\w*|"
    r"rather than|not necessarily|may instead|revisit\w*|re-?analy\w*|not unique|tentative\w*|marginal\w*|"
    r"partially|depends on|unless)\b",
)
SINGLE_DATASET_CUE = re.compile(
    r"\b(?:a single (?:epoch|transit|eclipse|visit|observation|night|dataset|instrument|event|spectrum)|"
    r"one (?:transit|epoch|visit|night)|"
    r"first (?:detection|measurement|observation)s?|tentative(?:ly)?|marginal(?:ly)?|"
    r"\d(?:\.\d)?\s?sigma|\d(?:\.\d)?σ)\b",
)


@dataclass(frozen=True)
class Claim:
    """One claim sentence with provenance and what it is about."""

    paper_id: str
    index: int
    text: str
    detected: Detected
    quantities: tuple = ()
    stances: tuple[tuple[str, str], ...] = ()
    result: bool = False
    negative: bool = False
    tension: bool = False
    method_issue: bool = False
    qualify: bool = False
    single_dataset: bool = False

    @property
    def claim_id(self) -> str:
        return f"{self.paper_id}#s{self.index}"

    @property
    def is_claim(self) -> bool:
        return self.result or self.negative or self.tension or bool(self.stances) or self.measured

    @property
    def measured(self) -> bool:
        """True when the sentence states a determination: a value with an uncertainty that is not a bound."""
        return any(dict(q)["err"] is not None and not dict(q).get("bound") for q in self.quantities)


@dataclass
class PaperClaims:
    """A paper's sentences, claims and what the whole abstract is about."""

    record: CorpusRecord
    sentences: list[str]
    claims: list[Claim]
    detected: Detected
    title_objects: tuple[str, ...] = field(default_factory=tuple)


_DIGIT = re.compile(r"\d")


def _squash(text: str) -> str:
    return re.sub(r"[\s\-\u2010\u2011\u2013]", "", text).lower()


def analyse_sentence(paper_id: str, index: int, text: str, objects: tuple[str, ...] | None = None) -> Claim:
    """Cue flags, detected things and key quantities of one (plain-text) sentence.

    ``objects``: the designations already found in the whole abstract; the sentence is
    about those whose spelling (ignoring spaces and hyphens) it contains. ``None`` runs
    the designation detector on the sentence itself."""
    low = text.lower()
    if objects is None:
        detected = detect(text)
    else:
        squashed = _squash(text)
        mine = tuple(o for o in objects if _squash(o) in squashed)
        detected = replace(detect(text, objects=False), objects=mine)
    return Claim(
        paper_id=paper_id,
        index=index,
        text=text,
        detected=detected,
        quantities=tuple(tuple(sorted(q.items())) for q in find_quantities(text)) if _DIGIT.search(text) else (),
        stances=tuple(find_stances(text)),
        result=bool(RESULT_CUE.search(low)),
        negative=bool(NEGATIVE_CUE.search(low)),
        tension=bool(TENSION_CUE.search(low)),
        method_issue=bool(METHOD_CUE.search(low)),
        qualify=bool(QUALIFY_CUE.search(low)),
        single_dataset=bool(SINGLE_DATASET_CUE.search(low)),
    )


def extract_claims(record: CorpusRecord) -> PaperClaims:
    """Split one abstract into sentences and keep the claim sentences (result, non-detection,
    tension or caveat), each with its provenance ``(paper id, sentence index)``."""
    title = detex(record.title)
    sentences = split_sentences(detex(record.abstract))
    objects = tuple(o for o in find_objects(title + ". " + " ".join(sentences)) if _plausible_object(o))
    title_found = analyse_sentence(record.id, -1, title, objects=objects).detected
    analysed = [analyse_sentence(record.id, i, s, objects=objects) for i, s in enumerate(sentences)]
    claims = [c for c in analysed if c.is_claim or c.qualify or c.method_issue]

    def union(kind: str) -> tuple[str, ...]:
        seen = dict.fromkeys(getattr(title_found, kind))
        for claim in analysed:
            seen.update(dict.fromkeys(getattr(claim.detected, kind)))
        return tuple(seen)

    whole = Detected(
        objects=objects,
        molecules=union("molecules"),
        instruments=union("instruments"),
        methods=union("methods"),
        properties=union("properties"),
        systematics=union("systematics"),
        phenomena=union("phenomena"),
    )
    return PaperClaims(
        record=record, sentences=sentences, claims=claims, detected=whole, title_objects=title_found.objects
    )


def main_claim(paper: PaperClaims) -> str | None:
    """The paper's headline claim: its first result sentence, else its first claim, else None."""
    for claim in paper.claims:
        if claim.result:
            return claim.text
    for claim in paper.claims:
        if claim.negative or claim.tension:
            return claim.text
    return None


_LEAD_IN = re.compile(
    r"^(?:(?:here|in this (?:paper|work|study|letter)|finally|moreover|furthermore|in addition|additionally|"
    r"overall|thus|"
    r"therefore|consequently|importantly|notably|together|taken together|as a result|"
    r"specifically|in particular|crucially|"
    r"using [^,]{3,80})\s*,?\s+)*(?:we\s+(?:also\s+|further\s+)?"
    r"(?:find|found|show|showed|demonstrate|confirm|report|conclude|infer|"
    r"argue|suggest|reveal|determine|establish|identify)\s+(?:that\s+)?"
    r"|our (?:results?|analysis|findings|observations|data)\s+"
    r"(?:show|shows|indicate|indicates|suggest|suggests|reveal|reveals|imply|implies|demonstrate|demonstrates)\s+(?:that\s+)?"
    r"|(?:these|the) (?:results?|findings|observations|data) "
    r"(?:show|indicate|suggest|reveal|imply|demonstrate)\s+(?:that\s+)?)",
    re.I,
)


_SECTION = re.compile(
    r"^(?:(?:results?|conclusions?|methods?|aims?|context|background|findings|summary)\s*[:.]\s*)+", re.I
)


_NOT_DECLARATIVE = re.compile(r"^(?:how|whether|what|why|which|to|by|using|in order|from|for|with|if)\b", re.I)


def is_declarative(clause: str) -> bool:
    """False for clause fragments that do not state a result ("how the ...", "to test ...")."""
    return not _NOT_DECLARATIVE.match(clause)


def claim_clause(sentence: str, max_chars: int = 220) -> str:
    """A claim sentence as a clause: lead-in ("Here we show that") removed, first letter
    lowered unless it starts a name, final period dropped, cut at a clause boundary
    when longer than ``max_chars``."""
    text = _SECTION.sub("", sentence.strip())
    text = _LEAD_IN.sub("", text).strip()
    text = text.rstrip(" .;:")
    text = text.replace("?", "")
    if len(text) > max_chars:
        cut = max(text.rfind(sep, 0, max_chars) for sep in (", ", "; ", " and ", " which ", " while ", " -- "))
        text = text[:cut] if cut > max_chars // 3 else text[:max_chars].rsplit(" ", 1)[0]
        text = text.rstrip(" ,;:-")
    if (
        text
        and text[0].isupper()
        and not (len(text) > 1 and (text[1].isupper() or text[1].isdigit() or text[1] in "-/"))
    ):
        text = text[0].lower() + text[1:]
    return text


# --------------------------------------------------------------------------- whole corpus, cached

EXTRACT_VERSION = "8"


def analyse_corpus(past, progress: bool = False) -> list[PaperClaims]:
    """:func:`extract_claims` for every record of a past corpus, sorted by (date, id).

    The result is cached in ``<workspace>/.cache/generators/`` under the corpus seal and
    :data:`EXTRACT_VERSION` (about a minute for 6,000 abstracts on one busy core; the
    designation detector is the slow part), and in memory for the process."""
    import pickle

    key = (past.seal, EXTRACT_VERSION)
    if key in _MEMO:
        return _MEMO[key]
    cache = past.ws.cache / "generators" / f"claims-{past.seal[:24]}-v{EXTRACT_VERSION}.pkl"
    papers = None
    if cache.is_file():
        try:
            with open(cache, "rb") as handle:
                papers = pickle.load(handle)
        except Exception:  # noqa: BLE001 - a stale or broken cache is rebuilt
            papers = None
    if papers is None:
        from backtest.core.fileio import atomic_writer

        records = sorted(past.records(), key=lambda r: (r.published, r.id))
        papers = [extract_claims(r) for r in records]
        with atomic_writer(cache, "wb") as handle:
            pickle.dump(papers, handle, protocol=pickle.HIGHEST_PROTOCOL)
    _MEMO.clear()
    _MEMO[key] = papers
    return papers


_MEMO: dict[tuple[str, str], list[PaperClaims]] = {}
