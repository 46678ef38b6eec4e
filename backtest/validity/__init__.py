"""validity"""
